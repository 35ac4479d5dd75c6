#include "engine/runtime/kv_cache.h"

#include <new>

#include "absl/strings/str_cat.h"

namespace semmoe::engine::runtime {

PagedSequence::~PagedSequence() { cache_.Release(pages_); }

int PagedSequence::capacity() const {
  return static_cast<int>(pages_.size()) * cache_.options_.page_size;
}

float* PagedKvCache::Row(absl::Span<const int32_t> pages, int layer, int position, int kind) {
  const auto& o = options_;
  if (arena_ == nullptr) return nullptr;  // No host arena (Options::host_arena).
  const int page = pages[position / o.page_size];
  const int slot = position % o.page_size;
  // A page holds, per layer, page_size key rows then page_size value rows.
  const model::KvShape& shape = o.shape;
  float* layer_block = arena_.get() + page * page_floats_ +
                       static_cast<int64_t>(layer) * o.page_size * shape.floats();
  return kind == 0 ? layer_block + static_cast<int64_t>(slot) * shape.key_size
                   : layer_block + static_cast<int64_t>(o.page_size) * shape.key_size +
                         static_cast<int64_t>(slot) * shape.value_size;
}

float* PagedSequence::Key(int layer, int position) {
  return cache_.Row(pages_, layer, position, 0);
}
float* PagedSequence::Value(int layer, int position) {
  return cache_.Row(pages_, layer, position, 1);
}

int PageTableView::capacity() const {
  return static_cast<int>(pages_.size()) * cache_.options_.page_size;
}
float* PageTableView::Key(int layer, int position) {
  return cache_.Row(pages_, layer, position, 0);
}
float* PageTableView::Value(int layer, int position) {
  return cache_.Row(pages_, layer, position, 1);
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

PagedKvCache::PagedKvCache(const Options& options)
    : options_(options),
      page_floats_(static_cast<int64_t>(options.num_layers) * options.page_size *
                   options.shape.floats()) {}

absl::StatusOr<std::unique_ptr<PagedKvCache>> PagedKvCache::Create(const Options& options) {
  if (options.num_layers <= 0 || options.shape.key_size <= 0 || options.shape.value_size < 0 ||
      options.page_size <= 0 || options.num_pages <= 0) {
    return absl::InvalidArgumentError("PagedKvCache: every size must be positive");
  }
  std::unique_ptr<PagedKvCache> cache(new PagedKvCache(options));
  const int64_t floats = cache->page_floats_ * options.num_pages;
  if (options.host_arena) cache->arena_.reset(new (std::nothrow) float[floats]);
  if (options.host_arena && cache->arena_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("PagedKvCache: cannot allocate ", floats * 4, " bytes"));
  }
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
