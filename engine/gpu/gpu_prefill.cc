#include "engine/gpu/gpu_prefill.h"

#include "common/status_macros.h"

namespace semmoe::engine::gpu {

absl::StatusOr<std::unique_ptr<GpuPrefill>> GpuPrefill::Create(const model::ModelConfig& config,
                                                               const model::ModelWeights& weights,
                                                               const GpuTarget& target,
                                                               int max_batch_tokens) {
  std::unique_ptr<GpuPrefill> p(new GpuPrefill());
  ASSIGN_OR_RETURN(p->pages_, offline::PrefillPageLender(config, max_batch_tokens));
  ASSIGN_OR_RETURN(p->forward_, GpuTransformer::Create(config, weights,
                                                       {.device = target.device,
                                                        .bf16 = target.bf16,
                                                        .num_pages = p->pages_->total_pages(),
                                                        .page_size = offline::kPrefillPageSize}));
  return p;
}

offline::PrefillBackend GpuPrefill::backend() { return offline::BackendOver(*forward_, *pages_); }

}  // namespace semmoe::engine::gpu
