#include "engine/offline/cpu_prefill.h"

namespace semmoe::engine::offline {

absl::StatusOr<std::unique_ptr<CpuPrefill>> CreateCpuPrefill(const model::ModelConfig& config,
                                                             const model::ModelWeights& weights,
                                                             int max_batch_tokens) {
  return CpuPrefill::Create(config, max_batch_tokens, [&](int num_pages, int page_size) {
    return forward::CpuForward::Create(config, weights,
                                       {.num_pages = num_pages, .page_size = page_size});
  });
}

}  // namespace semmoe::engine::offline
