#include "engine/gpu/gpu_serving_rank.h"

#include "common/status_macros.h"
#include "engine/gpu/gpu_batch.h"
#include "engine/gpu/nccl_communicator.h"

namespace semmoe::engine::gpu {

absl::StatusOr<std::unique_ptr<GpuServingRank>> GpuServingRank::Create(
    const model::ModelConfig& config, const model::ModelWeights& weights,
    const planner::Placement& placement, const RendezvousOptions& rendezvous,
    const GpuTarget& target, const runtime::BatchEngine::Options& batch, const GpuTpOptions& tp) {
  std::unique_ptr<GpuServingRank> rank(new GpuServingRank());
  if (rendezvous.size == 1) {
    ASSIGN_OR_RETURN(rank->forward_, CreateGpuForward(config, weights, target, batch));
    return rank;
  }
  ASSIGN_OR_RETURN(rank->store_, OpenStore(rendezvous.address));
  ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> nccl,
                   NcclCommunicator::Create(*rank->store_, {.rank = rendezvous.rank,
                                                            .size = rendezvous.size,
                                                            .device = target.device,
                                                            .prefix = rendezvous.prefix + "-nccl",
                                                            .timeout = rendezvous.timeout}));
  rank->nccl_ = std::move(nccl);
  ASSIGN_OR_RETURN(rank->forward_, CreateGpuForward(config, weights, target, batch, &placement,
                                                    rank->nccl_.get(), tp));
  return rank;
}

}  // namespace semmoe::engine::gpu
