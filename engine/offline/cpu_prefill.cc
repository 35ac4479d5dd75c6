#include "engine/offline/cpu_prefill.h"

#include "common/status_macros.h"

namespace semmoe::engine::offline {

absl::StatusOr<std::unique_ptr<CpuPrefill>> CpuPrefill::Create(const model::ModelConfig& config,
                                                               const model::ModelWeights& weights,
                                                               int max_batch_tokens) {
  constexpr int kPageSize = 16;
  const int pages =
      PrefillPagesNeeded(max_batch_tokens, config.max_position_embeddings, kPageSize);
  std::unique_ptr<CpuPrefill> p(new CpuPrefill());
  ASSIGN_OR_RETURN(p->forward_, forward::CpuForward::Create(
                                    config, weights, {.num_pages = pages, .page_size = kPageSize}));
  ASSIGN_OR_RETURN(p->pages_, runtime::PagedKvCache::Create({.num_layers = config.num_layers,
                                                             .shape = config.kv_shape(),
                                                             .page_size = kPageSize,
                                                             .num_pages = pages,
                                                             .host_arena = false}));
  return p;
}

PrefillBackend CpuPrefill::backend() {
  forward::CpuForward* forward = forward_.get();
  return {.forward =
              [forward](absl::Span<const model::SequenceInput> batch,
                        const model::ForwardOptions& options) {
                return forward->Forward(batch, options);
              },
          .cache = pages_.get()};
}

}  // namespace semmoe::engine::offline
