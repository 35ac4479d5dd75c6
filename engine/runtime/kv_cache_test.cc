#include "engine/runtime/kv_cache.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace semmoe::engine::runtime {
namespace {

PagedKvCache::Options Small() {
  return {.num_layers = 2, .shape = {3, 3}, .page_size = 4, .num_pages = 5};
}

TEST(PagedKvCacheTest, ReserveGrowsByPagesAndReleasesOnDestruction) {
  auto cache = PagedKvCache::Create(Small());
  ASSERT_TRUE(cache.ok());
  {
    auto seq = (*cache)->NewSequence();
    EXPECT_EQ(seq->capacity(), 0);
    ASSERT_TRUE((*cache)->Reserve(*seq, 5).ok());
    EXPECT_EQ(seq->capacity(), 8);
    EXPECT_EQ((*cache)->free_pages(), 3);
    ASSERT_TRUE((*cache)->Reserve(*seq, 8).ok());  // Already fits.
    EXPECT_EQ((*cache)->free_pages(), 3);
  }
  EXPECT_EQ((*cache)->free_pages(), 5);
}

TEST(PagedKvCacheTest, ExhaustionIsAllOrNothing) {
  auto cache = PagedKvCache::Create(Small());
  auto a = (*cache)->NewSequence();
  ASSERT_TRUE((*cache)->Reserve(*a, 12).ok());  // 3 pages.
  auto b = (*cache)->NewSequence();
  absl::Status s = (*cache)->Reserve(*b, 12);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(b->capacity(), 0);
  EXPECT_EQ((*cache)->free_pages(), 2);
}

TEST(PagedKvCacheTest, SequencesNeverShareAPage) {
  auto cache = PagedKvCache::Create(Small());
  ASSERT_TRUE(cache.ok());
  auto a = (*cache)->NewSequence(), b = (*cache)->NewSequence();
  ASSERT_TRUE((*cache)->Reserve(*a, 8).ok());
  ASSERT_TRUE((*cache)->Reserve(*b, 9).ok());
  std::vector<int32_t> all(a->pages().begin(), a->pages().end());
  all.insert(all.end(), b->pages().begin(), b->pages().end());
  ASSERT_EQ(all.size(), 5u);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  const model::KvSequence& kv = *a;
  EXPECT_EQ(kv.page_table().size(), 2u);
  EXPECT_EQ(kv.page_table()[1], a->pages()[1]);
}

TEST(PagedKvCacheTest, AViewOverAnotherCachesPageTable) {
  // Two caches of one shape (an Attention-TP leader and a follower): the follower's view over
  // the leader's page table names the same pages in its own forward's arena.
  auto leader = PagedKvCache::Create(Small());
  auto follower = PagedKvCache::Create(Small());
  ASSERT_TRUE(leader.ok() && follower.ok());
  auto skip = (*leader)->NewSequence();
  ASSERT_TRUE((*leader)->Reserve(*skip, 5).ok());  // So the next pages are not 0, 1.
  auto seq = (*leader)->NewSequence();
  ASSERT_TRUE((*leader)->Reserve(*seq, 7).ok());
  const std::vector<int32_t> pages(seq->pages().begin(), seq->pages().end());
  auto view = (*follower)->View(pages);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ((*view)->capacity(), seq->capacity());
  EXPECT_EQ(std::vector<int32_t>((*view)->page_table().begin(), (*view)->page_table().end()),
            pages);
  EXPECT_EQ((*follower)->View({0, 999}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*follower)->free_pages(), (*follower)->total_pages());  // Views allocate nothing.
  EXPECT_TRUE(model::UnpagedKvSequence(1).page_table().empty());
}

TEST(PagedKvCacheTest, BadOptions) {
  auto o = Small();
  o.page_size = 0;
  EXPECT_EQ(PagedKvCache::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PagedKvCache::PagesForBytes(Small(), 2 * 2 * 4 * 3 * 4 * 10), 10);
  EXPECT_EQ(PagedKvCache::PagesForBytes(Small(), 1), 1);
}

}  // namespace
}  // namespace semmoe::engine::runtime
