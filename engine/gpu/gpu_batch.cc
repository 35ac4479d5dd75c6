#include "engine/gpu/gpu_batch.h"

#include "common/status_macros.h"
#include "engine/runtime/kv_cache.h"

namespace semmoe::engine::gpu {

absl::StatusOr<std::unique_ptr<GpuTransformer>> CreateGpuForward(
    const model::ModelConfig& config, const model::ModelWeights& weights, const GpuTarget& target,
    const runtime::BatchEngine::Options& options, const planner::Placement* placement,
    Communicator* comm, const GpuTpOptions& tp) {
  // The same page count BatchEngine::Create gives its host cache.
  const int pages =
      runtime::PagedKvCache::PagesForModel(config, options.page_size, options.kv_cache_bytes);
  return GpuTransformer::Create(config, weights,
                                {.device = target.device,
                                 .bf16 = target.bf16,
                                 .fp8 = target.fp8,
                                 .num_pages = pages,
                                 .page_size = options.page_size,
                                 .decode_graphs = placement == nullptr ? target.decode_graphs : 0,
                                 .placement = placement,
                                 .comm = comm,
                                 .attention_tp = tp.enabled,
                                 .predictor = tp.predictor,
                                 .token_balance_eps = tp.token_balance_eps,
                                 .topology = target.topology});
}

}  // namespace semmoe::engine::gpu
