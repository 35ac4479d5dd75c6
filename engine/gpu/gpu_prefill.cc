#include "engine/gpu/gpu_prefill.h"

#include "common/status_macros.h"

namespace semmoe::engine::gpu {

absl::StatusOr<std::unique_ptr<GpuPrefill>> GpuPrefill::Create(const model::ModelConfig& config,
                                                               const model::ModelWeights& weights,
                                                               const GpuTarget& target,
                                                               int max_batch_tokens) {
  constexpr int kPageSize = 16;
  const int pages =
      offline::PrefillPagesNeeded(max_batch_tokens, config.max_position_embeddings, kPageSize);
  std::unique_ptr<GpuPrefill> p(new GpuPrefill());
  ASSIGN_OR_RETURN(p->forward_, GpuTransformer::Create(config, weights,
                                                       {.device = target.device,
                                                        .bf16 = target.bf16,
                                                        .num_pages = pages,
                                                        .page_size = kPageSize}));
  ASSIGN_OR_RETURN(p->pages_, runtime::PagedKvCache::Create({.num_layers = config.num_layers,
                                                             .shape = config.kv_shape(),
                                                             .page_size = kPageSize,
                                                             .num_pages = pages,
                                                             .host_arena = false}));
  return p;
}

offline::PrefillBackend GpuPrefill::backend() {
  GpuTransformer* forward = forward_.get();
  return {.forward =
              [forward](absl::Span<const model::SequenceInput> batch,
                        const model::ForwardOptions& options) {
                return forward->Forward(batch, options);
              },
          .cache = pages_.get()};
}

}  // namespace semmoe::engine::gpu
