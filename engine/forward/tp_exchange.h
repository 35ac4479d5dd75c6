// TpExchange<Ops>: Attention-TP's shuffled reduce-scatter (SRS) and all-gather (SAG) for the
// op-set forward (engine/forward/forward_runner.h), on any Ops whose memory the communicator
// takes (NCCL with CudaOps; Gloo with CpuOps, the CPU product's ranks).
//
// Every rank holds the attention output of its heads for the whole batch: a partial sum. The SRS
// packs those rows in the layer's chunk order (a device kernel, fused into the staging buffer the
// reduce-scatter reads), sums each chunk on its rank and adds the residual rows gathered in the
// same order; the rank runs the FFN on its chunk; the SAG gathers every chunk and unpacks it into
// batch order (a device kernel again). The chunk order is the planner's rule (shuffle.h): with a
// DevicePredictor, tokens go to the rank their experts are predicted on, scored on the device
// (device_prediction.h: the T tables over the batch's token ids and predecessors, and the A tables
// over the history below), balanced on the host (the collectives' chunk sizes are host values);
// every rank has the same inputs, so all derive the same plan. Without one, contiguous chunks. A
// misprediction costs an all-to-all row, never a different result.
//
// History (A tables): after a MoE layer each chunk's owner knows the device its tokens' experts
// were homed on (EpExchange::home_devices); those ride the SAG behind the chunk's rows — one
// collective, not a second one for one value per token — and are unpacked on the device into the
// homes at the previous two MoE layers, which the next layers' scores read.
//
// Thread-compatible.
#ifndef SEMMOE_ENGINE_FORWARD_TP_EXCHANGE_H_
#define SEMMOE_ENGINE_FORWARD_TP_EXCHANGE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "engine/forward/device_prediction.h"
#include "engine/parallel/communicator.h"
#include "engine/parallel/device_predictor.h"
#include "engine/parallel/shuffle.h"
#include "engine/parallel/tp_counters.h"
#include "engine/text/config.h"

namespace semmoe::engine::forward {

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
    plans_.resize(config.num_layers);
    counters_.srs_seconds_per_layer.assign(config.num_layers, 0.0);
    counters_.sag_seconds_per_layer.assign(config.num_layers, 0.0);
  }

  // Uploads the predictor's tables (Ops memory must be usable).
  absl::Status Init() {
    if (predictor_ == nullptr) return absl::OkStatus();
    ASSIGN_OR_RETURN(prediction_, DevicePrediction<Ops>::Create(*predictor_, ops_));
    for (size_t m = 0; m < moe_index_.size(); ++m) {
      history_ = history_ || prediction_->uses_history(static_cast<int>(m));
    }
    return absl::OkStatus();
  }

  // The prediction tables' bytes in Ops memory (0: none).
  int64_t prediction_bytes() const { return prediction_ ? prediction_->bytes() : 0; }
  // Whether the SAG carries the homes (some layer has an A table).
  bool carries_history() const { return history_; }

  // Before a pass of `tokens` tokens: `ids` and `previous` (each token's predecessor, −1
  // unknown), Ops memory, stay valid for the pass. Clears the history.
  absl::Status BeginPass(const int32_t* ids, const int32_t* previous, int64_t tokens) {
    ids_ = ids;
    previous_ = previous;
    if (!history_) return absl::OkStatus();
    RETURN_IF_ERROR(prev1_.Reserve(tokens));
    RETURN_IF_ERROR(prev2_.Reserve(tokens));
    const std::vector<float> unknown(tokens, -1.0f);
    RETURN_IF_ERROR(ops_.CopyIn(prev1_.data(), unknown.data(), tokens));
    RETURN_IF_ERROR(ops_.CopyIn(prev2_.data(), unknown.data(), tokens));
    return ops_.Finish();  // `unknown` goes out of scope.
  }

  // Plans `layer`'s chunks for the pass's `tokens` tokens and reduce-scatters: this rank's
  // chunk[i] = Σ over ranks of partial[order[begin + i]] + x[order[begin + i]]. `partial`, `x`:
  // [tokens, hidden] Ops memory; `chunk` must hold rows × (hidden + 1) floats for the rows
  // returned (≤ tokens).
  absl::StatusOr<int64_t> ReduceScatter(int layer, int64_t tokens, const float* partial,
                                        const float* x, float* chunk) {
    const int g = comm_.size(), me = comm_.rank();
    absl::Time start = absl::Now();
    ASSIGN_OR_RETURN(plans_[layer], Plan(layer, tokens));
    counters_.predict_seconds += Seconds(start);
    counters_.tokens += tokens;
    const ShufflePlan& plan = plans_[layer];
    layer_ = layer;
    RETURN_IF_ERROR(order_.Reserve(tokens));
    RETURN_IF_ERROR(packed_.Reserve(tokens * (hidden_ + 1)));
    RETURN_IF_ERROR(ops_.CopyIn(order_.data(), plan.order.data(), tokens));
    RETURN_IF_ERROR(ops_.ShufflePack(partial, order_.data(), tokens, hidden_, packed_.data()));
    counts_.resize(g);
    for (int r = 0; r < g; ++r) counts_[r] = plan.counts[r] * hidden_;
    const int64_t begin = plan.begin(me), rows = plan.counts[me];
    RETURN_IF_ERROR(ops_.Finish());  // The collectives run on their own stream.
    RETURN_IF_ERROR(comm_.ReduceScatterV(absl::Span<const float>(packed_.data(), tokens * hidden_),
                                         counts_, absl::Span<float>(chunk, rows * hidden_)));
    RETURN_IF_ERROR(residual_.Reserve(rows * hidden_));
    RETURN_IF_ERROR(
        ops_.GatherRowsByIndex(x, order_.data() + begin, rows, hidden_, residual_.data()));
    RETURN_IF_ERROR(ops_.AddInPlace(chunk, residual_.data(), rows * hidden_));
    const double srs = Seconds(start);
    counters_.srs_seconds += srs;
    counters_.srs_seconds_per_layer[layer] += srs;
    return rows;
  }

  // x [tokens, hidden] on every rank = every rank's chunk, back in batch order (the plan of the
  // latest ReduceScatter). `homes`: after a MoE layer, the device each of this rank's chunk
  // tokens had its experts homed on (EpExchange::home_devices); carried when the history is.
  absl::Status AllGather(float* chunk, float* x, const std::vector<int32_t>& homes) {
    absl::Time start = absl::Now();
    RETURN_IF_ERROR(Gather(chunk, x, homes));
    const double sag = Seconds(start);
    counters_.sag_seconds += sag;
    counters_.sag_seconds_per_layer[layer_] += sag;
    return absl::OkStatus();
  }

  // The plans of the latest pass, per model layer (tests compare them with the host's rule).
  const std::vector<ShufflePlan>& plans() const { return plans_; }
  // What the exchange did so far. Seconds are the host's: each call waits for the work queued
  // before its collective, not for the packing and unpacking it queues (on the CPU: all of it).
  const TpStageCounters& counters() const { return counters_; }
  // Counts on from `before` (the exchange this one replaces in a rollout).
  void ContinueCounters(const TpStageCounters& before) { counters_ = before; }
  // Per token of the latest pass (batch order): the device holding the homes of most of its
  // experts at the latest MoE layer, as the all-gathers carried them. Only with the A tables (the
  // predictions use the history); else empty. Copied out of Ops memory on each call.
  absl::StatusOr<std::vector<int32_t>> LastDevices() {
    if (!history_ || plans_[layer_].order.empty()) return std::vector<int32_t>{};
    const int64_t n = static_cast<int64_t>(plans_[layer_].order.size());
    std::vector<float> devices(n);
    RETURN_IF_ERROR(ops_.CopyOut(devices.data(), prev1_.data(), n));
    RETURN_IF_ERROR(ops_.Finish());
    return std::vector<int32_t>(devices.begin(), devices.end());
  }

 private:
  absl::Status Gather(float* chunk, float* x, const std::vector<int32_t>& homes) {
    const int g = comm_.size(), me = comm_.rank();
    const ShufflePlan& plan = plans_[layer_];
    const int64_t total = static_cast<int64_t>(plan.order.size()), rows = plan.counts[me];
    const bool carry = history_ && moe_index_[layer_] >= 0;
    const int64_t width = hidden_ + (carry ? 1 : 0);
    if (carry) {
      if (static_cast<int64_t>(homes.size()) != rows) {
        return absl::InternalError(absl::StrCat("layer ", layer_, ": ", homes.size(),
                                                " expert homes for a chunk of ", rows));
      }
      const std::vector<float> tail(homes.begin(), homes.end());  // Exact small integers.
      RETURN_IF_ERROR(ops_.CopyIn(chunk + rows * hidden_, tail.data(), rows));
      RETURN_IF_ERROR(ops_.Finish());
    } else {
      RETURN_IF_ERROR(ops_.Finish());
    }
    std::vector<int64_t> counts(g);
    for (int r = 0; r < g; ++r) counts[r] = plan.counts[r] * width;
    RETURN_IF_ERROR(comm_.AllGatherV(absl::Span<const float>(chunk, rows * width), counts,
                                     absl::Span<float>(packed_.data(), total * width)));
    if (!carry) return ops_.ShuffleUnpack(packed_.data(), order_.data(), total, hidden_, x);
    // Each rank's block: its rows, then its homes.
    RETURN_IF_ERROR(ops_.Copy(prev2_.data(), prev1_.data(), total));
    int64_t at = 0;
    for (int r = 0; r < g; ++r) {
      const int64_t n = plan.counts[r], first = plan.begin(r);
      RETURN_IF_ERROR(
          ops_.ShuffleUnpack(packed_.data() + at, order_.data() + first, n, hidden_, x));
      RETURN_IF_ERROR(ops_.ShuffleUnpack(packed_.data() + at + n * hidden_, order_.data() + first,
                                         n, 1, prev1_.data()));
      at += n * width;
    }
    return absl::OkStatus();
  }

  // Seconds since `start`, which moves to now.
  static double Seconds(absl::Time& start) {
    const absl::Time now = absl::Now();
    const double s = absl::ToDoubleSeconds(now - start);
    start = now;
    return s;
  }

  absl::StatusOr<ShufflePlan> Plan(int layer, int64_t tokens) {
    const int g = comm_.size();
    const int moe = moe_index_[layer];
    if (prediction_ == nullptr || moe < 0) return PlainShuffle(tokens, g);
    RETURN_IF_ERROR(scores_.Reserve(tokens * g));
    RETURN_IF_ERROR(prediction_->Score(moe, ids_, previous_, tokens, prev2_.data(), prev1_.data(),
                                       scores_.data()));
    host_scores_.resize(tokens * g);
    RETURN_IF_ERROR(ops_.CopyOut(host_scores_.data(), scores_.data(), tokens * g));
    return PlanShuffle(host_scores_, g, token_balance_eps_);
  }

  Communicator& comm_;
  Ops& ops_;
  const DevicePredictor* predictor_;
  double token_balance_eps_;
  int64_t hidden_;
  std::vector<int> moe_index_;  // Model layer → MoE index or −1.
  std::unique_ptr<DevicePrediction<Ops>> prediction_;
  bool history_ = false;
  const int32_t* ids_ = nullptr;
  const int32_t* previous_ = nullptr;
  std::vector<ShufflePlan> plans_;
  TpStageCounters counters_;
  int layer_ = 0;                // Of the latest ReduceScatter.
  std::vector<int64_t> counts_;  // Floats per rank of the latest plan.
  std::vector<float> host_scores_;
  Array<int32_t> order_;
  Array<float> packed_, residual_, scores_, prev1_, prev2_;
};

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_TP_EXCHANGE_H_
