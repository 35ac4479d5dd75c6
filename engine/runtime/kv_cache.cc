#include "engine/runtime/kv_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace semmoe::engine::runtime {

PagedSequence::~PagedSequence() { cache_.Release(pages_); }

int PagedSequence::capacity() const {
  return static_cast<int>(pages_.size()) * cache_.options_.page_size;
}

int PageTableView::capacity() const {
  return static_cast<int>(pages_.size()) * cache_.options_.page_size;
}

absl::StatusOr<std::unique_ptr<PageTableView>> PagedKvCache::View(std::vector<int32_t> pages) {
  for (int32_t p : pages) {
    if (p < 0 || p >= options_.num_pages) {
      return absl::InvalidArgumentError(
          absl::StrCat("page ", p, " is outside the cache's ", options_.num_pages, " pages"));
    }
  }
  return std::unique_ptr<PageTableView>(new PageTableView(*this, std::move(pages)));
}

absl::StatusOr<std::unique_ptr<PagedKvCache>> PagedKvCache::Create(const Options& options) {
  if (options.num_layers <= 0 || options.shape.key_size <= 0 || options.shape.value_size < 0 ||
      options.page_size <= 0 || options.num_pages <= 0) {
    return absl::InvalidArgumentError("PagedKvCache: every size must be positive");
  }
  std::unique_ptr<PagedKvCache> cache(new PagedKvCache(options));
  absl::MutexLock lock(&cache->mu_);
  for (int32_t p = options.num_pages - 1; p >= 0; --p) cache->free_.push_back(p);
  return cache;
}

int PagedKvCache::PagesForBytes(const Options& options, int64_t max_bytes) {
  const int64_t page_bytes =
      static_cast<int64_t>(options.num_layers) * options.page_size * options.shape.floats() * 4;
  return static_cast<int>(std::max<int64_t>(1, max_bytes / std::max<int64_t>(1, page_bytes)));
}

int PagedKvCache::PagesNeeded(const PagedSequence& seq, int positions) const {
  const int pages = (positions + options_.page_size - 1) / options_.page_size;
  return std::max(0, pages - seq.num_pages());
}

absl::Status PagedKvCache::Reserve(PagedSequence& seq, int positions) {
  const int needed = PagesNeeded(seq, positions);
  if (needed == 0) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  if (needed > static_cast<int>(free_.size())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "KV cache: need ", needed, " pages, ", free_.size(), " free of ", options_.num_pages));
  }
  for (int i = 0; i < needed; ++i) {
    seq.pages_.push_back(free_.back());
    free_.pop_back();
  }
  return absl::OkStatus();
}

void PagedKvCache::Release(std::vector<int32_t>& pages) {
  absl::MutexLock lock(&mu_);
  free_.insert(free_.end(), pages.begin(), pages.end());
  pages.clear();
}

int PagedKvCache::free_pages() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(free_.size());
}

}  // namespace semmoe::engine::runtime
