#include "engine/offline/cpu_prefill.h"

#include "common/status_macros.h"

namespace semmoe::engine::offline {

absl::StatusOr<std::unique_ptr<CpuPrefill>> CpuPrefill::Create(const model::ModelConfig& config,
                                                               const model::ModelWeights& weights,
                                                               int max_batch_tokens) {
  std::unique_ptr<CpuPrefill> p(new CpuPrefill());
  ASSIGN_OR_RETURN(p->pages_, PrefillPageLender(config, max_batch_tokens));
  ASSIGN_OR_RETURN(p->forward_, forward::CpuForward::Create(config, weights,
                                                            {.num_pages = p->pages_->total_pages(),
                                                             .page_size = kPrefillPageSize}));
  return p;
}

PrefillBackend CpuPrefill::backend() { return BackendOver(*forward_, *pages_); }

}  // namespace semmoe::engine::offline
