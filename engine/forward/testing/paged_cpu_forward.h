// PagedCpuForward: the product's CPU forward (engine/forward/cpu_forward.h) on one device with an
// arena of its own, and the host cache that lends its pages (no arena), for tests that run
// passes over sequences of their own.
#ifndef SEMMOE_ENGINE_FORWARD_TESTING_PAGED_CPU_FORWARD_H_
#define SEMMOE_ENGINE_FORWARD_TESTING_PAGED_CPU_FORWARD_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "engine/forward/cpu_forward.h"
#include "engine/model/weights.h"
#include "engine/runtime/kv_cache.h"
#include "engine/text/config.h"

namespace semmoe::engine::forward::testing {

class PagedCpuForward {
 public:
  // `config` and `weights` borrowed; they outlive this.
  static absl::StatusOr<std::unique_ptr<PagedCpuForward>> Create(
      const model::ModelConfig& config, const model::ModelWeights& weights, int num_pages,
      int page_size = 4) {
    std::unique_ptr<PagedCpuForward> f(new PagedCpuForward());
    ASSIGN_OR_RETURN(f->pages_, runtime::PagedKvCache::Create({.num_layers = config.num_layers,
                                                               .shape = config.kv_shape(),
                                                               .page_size = page_size,
                                                               .num_pages = num_pages}));
    ASSIGN_OR_RETURN(f->forward_,
                     CpuForward::Create(config, weights,
                                        {.num_pages = num_pages, .page_size = page_size}));
    return f;
  }

  // A sequence with pages for `capacity` positions (the cache's error when they are not free).
  absl::StatusOr<std::unique_ptr<runtime::PagedSequence>> NewSequence(int capacity) {
    std::unique_ptr<runtime::PagedSequence> seq = pages_->NewSequence();
    RETURN_IF_ERROR(pages_->Reserve(*seq, capacity));
    return seq;
  }
  CpuForward& forward() { return *forward_; }
  // The cache that lends the arena's pages.
  runtime::PagedKvCache& pages() { return *pages_; }

 private:
  PagedCpuForward() = default;
  std::unique_ptr<runtime::PagedKvCache> pages_;
  std::unique_ptr<CpuForward> forward_;
};

}  // namespace semmoe::engine::forward::testing

#endif  // SEMMOE_ENGINE_FORWARD_TESTING_PAGED_CPU_FORWARD_H_
