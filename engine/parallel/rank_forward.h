// RankForward: the seam through which a serving rank's loop (GroupEngine) and its rollouts
// (PlacementRollout) reach a forward pass that is not the host's: a device backend's
// (engine/backend/device_backend.h; the CUDA one in engine/gpu). Without one, a rank runs its
// RankModel's CPU forward. A backend gives the engine this object explicitly; nothing rewrites
// the engine's options.
//
// Thread-compatible: called on the engine's loop thread only.
#ifndef SEMMOE_ENGINE_PARALLEL_RANK_FORWARD_H_
#define SEMMOE_ENGINE_PARALLEL_RANK_FORWARD_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/forward_io.h"
#include "engine/model/weights.h"
#include "engine/parallel/communicator.h"
#include "engine/parallel/device_predictor.h"
#include "engine/parallel/moe_layer_counters.h"
#include "planner/placement/placement.h"

namespace semmoe::engine {

// What a device forward measured since it started.
struct RankForwardCounters {
  std::vector<MoeLayerCounters> layers;  // Per MoE layer: its expert exchange (empty: none).
  // The collectives of its own group (NCCL), added to the rank's host group's; empty: none.
  bool has_comm = false;
  CommCounters comm;
};

// An expert a rank gains in a rollout, with its host weights (borrowed for the call).
struct GainedExpertWeights {
  int layer = 0, expert = 0;  // Model layer.
  const model::MlpWeights* weights = nullptr;
};

class RankForward {
 public:
  virtual ~RankForward() = default;

  // One pass of this rank, in lockstep with the group. As CpuForward::Forward (engine/forward/cpu_forward.h); under
  // Attention-DP the output also counts each sequence's expert activations served here and in
  // all (local_activations, activations); with options.collect_routing, the routing of this
  // rank's tokens (what the routing sampler records).
  virtual absl::StatusOr<model::ForwardOutput> Forward(absl::Span<const model::SequenceInput> batch,
                                                       const model::ForwardOptions& options) = 0;

  virtual RankForwardCounters counters() const = 0;

  // A live rollout, between two passes on every rank (placement_rollout.h): from the next pass
  // serve `next` (borrowed, outlives this or the next switch) with `gained` loaded and the
  // experts `next` drops here freed; under Attention-TP with `predictor`'s tables (null:
  // contiguous chunks). On an error naming a precondition nothing changed.
  virtual absl::Status SwitchPlacement(const planner::Placement& next,
                                       absl::Span<const GainedExpertWeights> gained,
                                       const DevicePredictor* predictor) = 0;
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_RANK_FORWARD_H_
