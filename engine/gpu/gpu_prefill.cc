#include "engine/gpu/gpu_prefill.h"

namespace semmoe::engine::gpu {

absl::StatusOr<std::unique_ptr<GpuPrefill>> CreateGpuPrefill(const model::ModelConfig& config,
                                                             const model::ModelWeights& weights,
                                                             const GpuTarget& target,
                                                             int max_batch_tokens) {
  return GpuPrefill::Create(config, max_batch_tokens, [&](int num_pages, int page_size) {
    return GpuTransformer::Create(config, weights,
                                  {.device = target.device,
                                   .bf16 = target.bf16,
                                   .fp8 = target.fp8,
                                   .num_pages = num_pages,
                                   .page_size = page_size});
  });
}

}  // namespace semmoe::engine::gpu
