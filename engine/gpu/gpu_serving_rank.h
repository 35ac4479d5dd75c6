// The GPU side of one serving rank (`engine serve --device cuda`): the forward on its device,
// sized for the rank's BatchEngine, and — in a group of several ranks — the NCCL group the
// expert-parallel exchange runs over, met through the same rendezvous store as the rank's Gloo
// group (its own key prefix). Attention-DP, or Attention-TP over the same group (`tp`; `config`
// and `weights` the rank's heads; a one-rank group runs the whole model, as DP).
#ifndef SEMMOE_ENGINE_GPU_GPU_SERVING_RANK_H_
#define SEMMOE_ENGINE_GPU_GPU_SERVING_RANK_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/gpu/gpu_transformer.h"
#include "engine/model/weights.h"
#include "engine/parallel/communicator.h"
#include "engine/parallel/rendezvous.h"
#include "engine/runtime/batch_engine.h"
#include "engine/text/config.h"
#include "gloo/rendezvous/store.h"
#include "planner/placement/placement.h"

namespace semmoe::engine::gpu {

class GpuServingRank {
 public:
  // `weights`: this rank's (its experts under `placement`); `placement` borrowed, outlives this.
  // Errors from the rendezvous (a peer that never comes: DEADLINE_EXCEEDED), NCCL, or
  // GpuTransformer::Create.
  static absl::StatusOr<std::unique_ptr<GpuServingRank>> Create(
      const model::ModelConfig& config, const model::ModelWeights& weights,
      const planner::Placement& placement, const RendezvousOptions& rendezvous,
      const GpuTarget& target, const runtime::BatchEngine::Options& batch,
      const GpuTpOptions& tp = {});

  GpuTransformer& forward() { return *forward_; }
  // The NCCL group's counters (null for a one-rank group).
  const Communicator* nccl() const { return nccl_.get(); }

 private:
  GpuServingRank() = default;
  std::unique_ptr<gloo::rendezvous::Store> store_;
  std::unique_ptr<Communicator> nccl_;       // Null for a one-rank group.
  std::unique_ptr<GpuTransformer> forward_;  // Declared last: destroyed before the group.
};

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_GPU_SERVING_RANK_H_
