// PagedKvCache: the pages of many sequences' attention keys and values, handed out and taken back.
//
// The keys and values themselves live in the arena of the forward pass (engine/forward's
// CpuForward, engine/gpu's GpuTransformer): `num_pages` pages, each `page_size` consecutive
// positions of one sequence for every layer. This object manages which page holds what: a
// sequence's page table maps position / page_size to a page, so sequences grow a page at a time
// and return every page when they end, with no fragmentation and no copying (the vLLM
// PagedAttention layout).
//
// Thread-safety: page allocation and release are internally synchronised; a PagedSequence itself
// is used by one thread at a time.
#ifndef SEMMOE_ENGINE_RUNTIME_KV_CACHE_H_
#define SEMMOE_ENGINE_RUNTIME_KV_CACHE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "engine/model/kv_sequence.h"
#include "engine/text/config.h"  // KvShape, ModelConfig.

namespace semmoe::engine::runtime {

class PagedKvCache;

// One sequence's pages. Returns them to the cache when destroyed. REQUIRES: the cache outlives
// every sequence made from it.
class PagedSequence : public model::KvSequence {
 public:
  ~PagedSequence() override;
  PagedSequence(const PagedSequence&) = delete;
  PagedSequence& operator=(const PagedSequence&) = delete;

  int capacity() const override;
  int num_pages() const { return static_cast<int>(pages_.size()); }
  // Its page table: position p lives in page pages()[p / page_size].
  absl::Span<const int32_t> pages() const { return pages_; }
  absl::Span<const int32_t> page_table() const override { return pages_; }

 private:
  friend class PagedKvCache;
  explicit PagedSequence(PagedKvCache& cache) : cache_(cache) {}

  PagedKvCache& cache_;
  std::vector<int32_t> pages_;
};

// A sequence over pages someone else allocated (an Attention-TP follower mirrors the leader's
// page tables in its own cache of the same shape). Owns nothing; the pages stay where they are.
class PageTableView : public model::KvSequence {
 public:
  int capacity() const override;
  absl::Span<const int32_t> page_table() const override { return pages_; }

 private:
  friend class PagedKvCache;
  PageTableView(PagedKvCache& cache, std::vector<int32_t> pages)
      : cache_(cache), pages_(std::move(pages)) {}
  PagedKvCache& cache_;
  std::vector<int32_t> pages_;
};

class PagedKvCache {
 public:
  struct Options {
    int num_layers = 0;
    model::KvShape shape;  // Floats per position per layer (ModelConfig::kv_shape()).
    int page_size = 16;    // Positions per page (> 0).
    int num_pages = 0;     // > 0.
  };
  // InvalidArgument for non-positive sizes.
  static absl::StatusOr<std::unique_ptr<PagedKvCache>> Create(const Options& options);

  // Pages needed to hold `max_bytes` of cache for these sizes (at least 1).
  static int PagesForBytes(const Options& options, int64_t max_bytes);
  // The same for the cache rows of a model of `config` (its layers and KvShape): the pages a
  // BatchEngine with this page_size and kv_cache_bytes hands out, which a forward that keeps the
  // keys and values itself sizes its arena with.
  static int PagesForModel(const model::ModelConfig& config, int page_size, int64_t max_bytes) {
    return PagesForBytes(
        {.num_layers = config.num_layers, .shape = config.kv_shape(), .page_size = page_size},
        max_bytes);
  }

  // A view over `pages` (not allocated from the free list); InvalidArgument for an id out of
  // range.
  absl::StatusOr<std::unique_ptr<PageTableView>> View(std::vector<int32_t> pages);

  std::unique_ptr<PagedSequence> NewSequence() {
    return std::unique_ptr<PagedSequence>(new PagedSequence(*this));
  }

  // Grows `seq` to hold at least `positions` positions. All or nothing: ResourceExhausted (and
  // no change) if the free pages do not suffice.
  absl::Status Reserve(PagedSequence& seq, int positions);
  // Pages `seq` would need to add to hold `positions`.
  int PagesNeeded(const PagedSequence& seq, int positions) const;

  int free_pages() const;
  int total_pages() const { return options_.num_pages; }
  int page_size() const { return options_.page_size; }

 private:
  friend class PagedSequence;
  friend class PageTableView;
  explicit PagedKvCache(const Options& options) : options_(options) {}
  void Release(std::vector<int32_t>& pages);

  const Options options_;
  mutable absl::Mutex mu_;
  std::vector<int32_t> free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace semmoe::engine::runtime

#endif  // SEMMOE_ENGINE_RUNTIME_KV_CACHE_H_
