// ExpertParallelFfn: a layer's FFN block when each rank holds only its own experts.
//
// For the rows this rank owns (its tokens under Attention-DP, its chunk under Attention-TP):
// post-attention RMSNorm, router (every rank has it), then per MoE layer
//   dispatch  one all-to-all-v: each token goes once to every rank running at least one of its
//             top-k experts, however many live there, with those experts' ids and gate weights
//             (an expert runs on the token's own rank if it holds a replica, else on its home);
//   experts   every rank runs its local experts grouped by expert over the rows it received;
//   combine   one all-to-all-v back: each rank returns, per received row, the gate-weighted sum
//             of its experts' outputs; the owner adds them up (in rank order).
// The qwen2_moe shared expert and dense layers run locally (every rank holds them). The result
// is exact for any placement: only the order of the float additions differs from one device.
//
// Wire format of a dispatched row (bytes): hidden × f32 | top_k × i32 expert id (−1 for experts
// held elsewhere) | top_k × f32 gate weight. A combined row: hidden × f32. The row counts are
// exchanged first (one i64 per peer).
//
// Thread-compatible (uses the communicator).
#ifndef SEMMOE_ENGINE_PARALLEL_EP_FFN_H_
#define SEMMOE_ENGINE_PARALLEL_EP_FFN_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/moe.h"
#include "engine/model/weights.h"
#include "engine/parallel/communicator.h"
#include "engine/parallel/moe_layer_counters.h"
#include "engine/text/config.h"
#include "planner/placement/placement.h"

namespace semmoe::engine {

class ExpertParallelFfn {
 public:
  // `weights` hold this rank's experts (and everything else); `placement` must match the model
  // (MoE layers, experts) and the group (devices = comm.size()). All borrowed; they outlive this.
  static absl::StatusOr<std::unique_ptr<ExpertParallelFfn>> Create(
      const model::ModelConfig& config, const model::ModelWeights& weights,
      const planner::Placement& placement, Communicator& comm);

  // ffn = FFN(post_attention_norm(x)) for `x` [rows, hidden] (resized). Every rank must call it
  // for every layer in the same order, with zero rows if it has none. `routing`: if non-null and
  // the layer is MoE, the rows' routing.
  absl::Status Run(int layer, const model::Matrix& x, model::Matrix& ffn, model::Routing* routing);

  // Serves by `placement` from the next Run (a rollout's switch, between passes; borrowed like
  // the first). InvalidArgument, and the current placement kept, unless it fits the model and
  // group and this rank's weights hold every expert it puts here.
  absl::Status SetPlacement(const planner::Placement& placement);

  // Indexed like placement.moe_layers().
  const std::vector<MoeLayerCounters>& counters() const { return counters_; }
  // The home device of most of each row's experts at the last MoE layer run (lowest id on ties);
  // what Attention-TP's inter-layer predictor needs.
  const std::vector<int32_t>& last_devices() const { return last_devices_; }
  int row_bytes() const;  // Bytes of one dispatched row.
  // Per row of the current forward pass (reset at the first MoE layer): its local activations,
  // and all of them, summed over the MoE layers run so far.
  const std::vector<int32_t>& row_local() const { return row_local_; }
  const std::vector<int32_t>& row_activations() const { return row_activations_; }

 private:
  ExpertParallelFfn(const model::ModelConfig& config, const model::ModelWeights& weights,
                    const planner::Placement& placement, Communicator& comm);
  static absl::Status Check(const model::ModelConfig& config, const model::ModelWeights& weights,
                            const planner::Placement& placement, const Communicator& comm);
  absl::Status RunExpertsEp(int layer, int moe_index, const model::Matrix& h,
                            const model::Routing& routing, model::Matrix& out);

  const model::ModelConfig& config_;
  const model::ModelWeights& weights_;
  const planner::Placement* placement_;
  Communicator& comm_;
  std::vector<int> moe_index_;  // Model layer → index into placement layers, or −1.
  std::vector<MoeLayerCounters> counters_;
  std::vector<int32_t> last_devices_;
  std::vector<int32_t> row_local_, row_activations_;
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_EP_FFN_H_
