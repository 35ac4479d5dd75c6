#include "engine/runtime/kv_cache.h"

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

TEST(PagedKvCacheTest, RowsOfDifferentSequencesLayersAndKindsNeverAlias) {
  // K/V of one size, of different sizes, and MLA's key-only rows (no values).
  for (model::KvShape shape : {model::KvShape{3, 3}, model::KvShape{5, 2}, model::KvShape{4, 0}}) {
    SCOPED_TRACE(testing::Message() << shape.key_size << "+" << shape.value_size);
    auto o = Small();
    o.shape = shape;
    auto cache = PagedKvCache::Create(o);
    ASSERT_TRUE(cache.ok());
    auto a = (*cache)->NewSequence(), b = (*cache)->NewSequence();
    ASSERT_TRUE((*cache)->Reserve(*a, 8).ok());
    ASSERT_TRUE((*cache)->Reserve(*b, 8).ok());
    auto fill = [&](bool check) {
      float value = 0;
      for (auto* seq : {a.get(), b.get()}) {
        for (int l = 0; l < 2; ++l) {
          for (int p = 0; p < 8; ++p) {
            for (int i = 0; i < shape.key_size; ++i) {
              float& k = seq->Key(l, p)[i];
              if (check) EXPECT_EQ(k, value++); else k = value++;
            }
            for (int i = 0; i < shape.value_size; ++i) {
              float& v = seq->Value(l, p)[i];
              if (check) EXPECT_EQ(v, value++); else v = value++;
            }
          }
        }
      }
    };
    fill(false);
    fill(true);
  }
}

TEST(PagedKvCacheTest, AViewOverAnotherCachesPageTableAddressesTheSameSlots) {
  // Two caches of one shape (an Attention-TP leader and a follower): the follower's view over the
  // leader's page table writes where the leader's sequence would.
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
  auto mirror = (*follower)->View(pages);
  (*view)->Key(1, 6)[2] = 42.0f;
  EXPECT_EQ((*mirror)->Key(1, 6)[2], 42.0f);
  // Same offsets as the leader's own sequence in its own arena.
  EXPECT_EQ(seq->Key(1, 6) - seq->Key(0, 0), (*view)->Key(1, 6) - (*view)->Key(0, 0));
  EXPECT_EQ((*follower)->View({0, 999}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*follower)->free_pages(), (*follower)->total_pages());  // Views allocate nothing.
}

TEST(PagedKvCacheTest, WithoutAHostArenaItStillHandsOutPagesAndPageTables) {
  auto o = Small();
  o.host_arena = false;  // Keys and values live on the GPU (engine/gpu).
  auto cache = PagedKvCache::Create(o);
  ASSERT_TRUE(cache.ok());
  auto seq = (*cache)->NewSequence();
  ASSERT_TRUE((*cache)->Reserve(*seq, 6).ok());
  EXPECT_EQ((*cache)->free_pages(), 3);
  const model::KvSequence& kv = *seq;
  ASSERT_EQ(kv.page_table().size(), 2u);
  EXPECT_EQ(kv.page_table()[0], seq->pages()[0]);
  EXPECT_EQ(seq->Key(0, 0), nullptr);
  auto view = (*cache)->View({4, 2});
  ASSERT_TRUE(view.ok());
  EXPECT_EQ((*view)->page_table().size(), 2u);
  EXPECT_EQ((*view)->page_table()[1], 2);
  EXPECT_TRUE(model::DenseKvSequence(1, {1, 1}, 1).page_table().empty());
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
