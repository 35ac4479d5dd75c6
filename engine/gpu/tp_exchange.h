// TpExchange<Ops>: Attention-TP's shuffled reduce-scatter (SRS) and all-gather (SAG) for the GPU
// forward (engine/gpu/forward_runner.h), on any Ops whose memory the communicator takes (NCCL
// with CudaOps; Gloo with the CPU emulation in CI). The GPU twin of engine/parallel/tp_stage.h.
//
// Every rank holds the attention output of its heads for the whole batch: a partial sum. The SRS
// packs those rows in the layer's chunk order (a device kernel, fused into the staging buffer the
// reduce-scatter reads), sums each chunk on its rank and adds the residual rows gathered in the
// same order; the rank runs the FFN on its chunk; the SAG gathers every chunk and unpacks it into
// batch order (a device kernel again). The chunk order is the planner's rule (shuffle.h): with a
// DevicePredictor, tokens go to the rank their experts are predicted on (from the T tables and
// previous-token contexts, computed on the host from the batch's token ids, which every rank has:
// all ranks derive the same plan); without one, contiguous chunks. A misprediction costs an
// all-to-all row, never a different result.
//
// Not yet: the A tables' history (the devices a token's experts used at the previous layers) —
// a predictor that uses it is given no history here, so it predicts from T alone.
//
// Thread-compatible.
#ifndef SEMMOE_ENGINE_GPU_TP_EXCHANGE_H_
#define SEMMOE_ENGINE_GPU_TP_EXCHANGE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "engine/model/config.h"
#include "engine/model/transformer.h"
#include "engine/parallel/communicator.h"
#include "engine/parallel/device_predictor.h"
#include "engine/parallel/shuffle.h"

namespace semmoe::engine::gpu {

template <typename Ops>
class TpExchange {
 public:
  template <typename T>
  using Array = typename Ops::template Array<T>;

  // All borrowed. `token_balance_eps`: with a predictor, a chunk may hold up to
  // ⌊(1 + eps) · batch / ranks⌋ tokens (engine serve --token_balance_eps).
  TpExchange(const model::ModelConfig& config, Communicator& comm, Ops& ops,
             const DevicePredictor* predictor, double token_balance_eps)
      : comm_(comm),
        ops_(ops),
        predictor_(predictor),
        token_balance_eps_(token_balance_eps),
        hidden_(config.hidden_size) {
    moe_index_.assign(config.num_layers, -1);
    const std::vector<int> moe = config.MoeLayers();
    for (size_t i = 0; i < moe.size(); ++i) moe_index_[moe[i]] = static_cast<int>(i);
  }

  // Plans `layer`'s chunks for the batch and reduce-scatters: this rank's chunk[i] = Σ over ranks
  // of partial[order[begin + i]] + x[order[begin + i]]. `partial`, `x`: [tokens, hidden] Ops
  // memory; `chunk` must hold the rows returned (≤ tokens).
  absl::StatusOr<int64_t> ReduceScatter(int layer, const model::BatchTokens& tokens,
                                        const float* partial, const float* x, float* chunk) {
    const int g = comm_.size(), me = comm_.rank();
    const int64_t total = static_cast<int64_t>(tokens.ids.size());
    plan_ = Plan(layer, tokens);
    RETURN_IF_ERROR(order_.Reserve(total));
    RETURN_IF_ERROR(packed_.Reserve(total * hidden_));
    RETURN_IF_ERROR(ops_.CopyIn(order_.data(), plan_.order.data(), total));
    RETURN_IF_ERROR(ops_.ShufflePack(partial, order_.data(), total, hidden_, packed_.data()));
    counts_.resize(g);
    for (int r = 0; r < g; ++r) counts_[r] = plan_.counts[r] * hidden_;
    const int64_t begin = plan_.begin(me), rows = plan_.counts[me];
    RETURN_IF_ERROR(ops_.Finish());  // The collectives run on their own stream.
    RETURN_IF_ERROR(comm_.ReduceScatterV(absl::Span<const float>(packed_.data(), total * hidden_),
                                         counts_, absl::Span<float>(chunk, rows * hidden_)));
    RETURN_IF_ERROR(residual_.Reserve(rows * hidden_));
    RETURN_IF_ERROR(
        ops_.GatherRowsByIndex(x, order_.data() + begin, rows, hidden_, residual_.data()));
    RETURN_IF_ERROR(ops_.AddInPlace(chunk, residual_.data(), rows * hidden_));
    return rows;
  }

  // x [tokens, hidden] on every rank = every rank's chunk, back in batch order (the plan of the
  // latest ReduceScatter).
  absl::Status AllGather(const float* chunk, float* x) {
    const int me = comm_.rank();
    const int64_t total = static_cast<int64_t>(plan_.order.size());
    RETURN_IF_ERROR(ops_.Finish());
    RETURN_IF_ERROR(comm_.AllGatherV(absl::Span<const float>(chunk, plan_.counts[me] * hidden_),
                                     counts_, absl::Span<float>(packed_.data(), total * hidden_)));
    return ops_.ShuffleUnpack(packed_.data(), order_.data(), total, hidden_, x);
  }

  // The latest plan's chunk sizes (tokens per rank).
  const std::vector<int64_t>& chunk_tokens() const { return plan_.counts; }

 private:
  ShufflePlan Plan(int layer, const model::BatchTokens& tokens) const {
    const int g = comm_.size();
    const int moe = moe_index_[layer];
    if (predictor_ == nullptr || moe < 0) return PlainShuffle(tokens.ids.size(), g);
    const std::vector<int32_t> unknown(tokens.ids.size(), -1);  // No A-table history yet.
    std::vector<float> scores(tokens.ids.size() * g);
    predictor_->Score(moe, tokens.ids, tokens.prev, unknown, unknown, absl::MakeSpan(scores));
    return PlanShuffle(scores, g, token_balance_eps_);
  }

  Communicator& comm_;
  Ops& ops_;
  const DevicePredictor* predictor_;
  double token_balance_eps_;
  int64_t hidden_;
  std::vector<int> moe_index_;  // Model layer → MoE index or −1.
  ShufflePlan plan_;
  std::vector<int64_t> counts_;  // Floats per rank of the latest plan.
  Array<int32_t> order_;
  Array<float> packed_, residual_;
};

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_TP_EXCHANGE_H_
