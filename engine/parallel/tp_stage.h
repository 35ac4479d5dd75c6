// Attention-TP: every rank runs the same batch through its slice of the attention heads
// (tp_weights.h), so each holds a partial sum of the attention output. The all-reduce that would
// follow is split: a reduce-scatter gives each rank the summed rows of its chunk of tokens, the
// rank adds the residual and runs the FFN (experts through expert parallelism) on that chunk, and
// an all-gather puts the full residual stream back on every rank. RS + AG move the same bytes as
// the all-reduce they replace.
//
// Shuffled (a DevicePredictor given): before each MoE layer the chunks are formed by predicted
// device (shuffle.h), so a token's chunk is usually on the rank holding its experts and the
// dispatch stays local; the permutation is fused into packing the reduce-scatter and unpacking
// the all-gather. Mispredicted tokens still reach their experts through the all-to-all: the
// result does not depend on the prediction. Plain (no predictor): contiguous chunks.
//
// Thread-compatible.
#ifndef SEMMOE_ENGINE_PARALLEL_TP_STAGE_H_
#define SEMMOE_ENGINE_PARALLEL_TP_STAGE_H_

#include <cstdint>
#include <vector>

#include "engine/model/transformer.h"
#include "engine/parallel/communicator.h"
#include "engine/parallel/device_predictor.h"
#include "engine/parallel/ep_ffn.h"
#include "engine/parallel/shuffle.h"
#include "engine/parallel/tp_counters.h"

namespace semmoe::engine {

class TpLayerStage final : public model::LayerStage {
 public:
  // All borrowed. `predictor` null = plain order. `token_balance_eps`: with a predictor, a rank's
  // chunk may hold up to ⌊(1 + eps) · batch / ranks⌋ tokens (0: equal chunks).
  TpLayerStage(const model::ModelConfig& config, ExpertParallelFfn& ffn, Communicator& comm,
               const DevicePredictor* predictor, double token_balance_eps = 0);

  absl::Status Run(int layer, const model::BatchTokens& tokens, model::Matrix& x,
                   model::Matrix& attn, model::Routing* routing) override;

  // Predicts with `predictor` from the next Run (a rollout's switch, between passes; borrowed).
  void SetPredictor(const DevicePredictor* predictor) { predictor_ = predictor; }

  const TpStageCounters& counters() const { return counters_; }
  // Per token of the latest batch (batch order): the device holding the homes of most of its
  // experts at the latest MoE layer, as this rank learned it from the all-gather. Only kept with
  // the A tables (the predictor uses history); otherwise −1.
  const std::vector<int32_t>& last_devices() const { return prev1_; }

 private:
  ShufflePlan Plan(int layer, const model::BatchTokens& tokens);

  ExpertParallelFfn& ffn_;
  Communicator& comm_;
  const DevicePredictor* predictor_;
  double token_balance_eps_;
  std::vector<int> moe_index_;  // Model layer → MoE index or −1.
  int hidden_;
  TpStageCounters counters_;
  // Per token of the current batch, its devices at the last two MoE layers (−1 unknown);
  // reset when a batch starts (the first layer).
  std::vector<int32_t> prev1_, prev2_;
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_TP_STAGE_H_
