#include "engine/forward/batch_layout.h"

#include <memory>
#include <vector>

#include "engine/runtime/kv_cache.h"
#include "gtest/gtest.h"

namespace semmoe::engine::forward {
namespace {

using model::LogitsMode;

class BatchLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cache = runtime::PagedKvCache::Create(
        {.num_layers = 1, .shape = {2, 2}, .page_size = 4, .num_pages = 16});
    ASSERT_TRUE(cache.ok());
    cache_ = std::move(*cache);
  }
  std::unique_ptr<runtime::PagedSequence> Sequence(int positions) {
    auto seq = cache_->NewSequence();
    EXPECT_TRUE(cache_->Reserve(*seq, positions).ok());
    return seq;
  }
  std::unique_ptr<runtime::PagedKvCache> cache_;
};

TEST_F(BatchLayoutTest, TokensLogitRowsAndPaddedPageTables) {
  auto a = Sequence(9), b = Sequence(2), c = Sequence(4);  // 3, 1 and 1 pages.
  const std::vector<int32_t> ta = {5, 6, 7}, tb = {8}, tc = {9, 10};
  const std::vector<model::SequenceInput> batch = {{ta, 6, a.get(), LogitsMode::kAll},
                                                   {tb, 1, b.get(), LogitsMode::kLast},
                                                   {tc, 0, c.get(), LogitsMode::kNone}};
  auto layout = LayOutBatch(batch, 4, 16);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->ids, (std::vector<int32_t>{5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(layout->positions, (std::vector<int32_t>{6, 7, 8, 1, 0, 1}));
  EXPECT_EQ(layout->seq_of_token, (std::vector<int32_t>{0, 0, 0, 1, 2, 2}));
  EXPECT_EQ(layout->logit_rows, (std::vector<int32_t>{0, 1, 2, 3}));  // kAll, then kLast.
  ASSERT_EQ(layout->max_pages, 3);
  ASSERT_EQ(layout->page_table.size(), 9u);
  for (int p = 0; p < 3; ++p) EXPECT_EQ(layout->page_table[p], a->pages()[p]);
  EXPECT_EQ(layout->page_table[3], b->pages()[0]);
  EXPECT_EQ(layout->page_table[4], 0);  // Padding.
  EXPECT_EQ(layout->page_table[6], c->pages()[0]);
}

TEST_F(BatchLayoutTest, DecodeBucketsArePowersOfTwoForPureDecodeSteps) {
  auto a = Sequence(9), b = Sequence(2), c = Sequence(4);
  const std::vector<int32_t> one = {5}, two = {5, 6};
  std::vector<model::SequenceInput> batch = {
      {one, 6, a.get()}, {one, 1, b.get()}, {one, 2, c.get()}};
  EXPECT_EQ(DecodeBucket(batch, 64), 4);
  EXPECT_EQ(DecodeBucket(batch, 2), 0);  // Over the largest bucket.
  EXPECT_EQ(DecodeBucket({batch.data(), 1}, 64), 1);
  EXPECT_EQ(DecodeBucket({}, 64), 0);
  batch[1].logits = LogitsMode::kAll;  // Scoring is not a decode step.
  EXPECT_EQ(DecodeBucket(batch, 64), 0);
  batch[1] = {two, 0, b.get()};  // Nor is a prefill chunk.
  EXPECT_EQ(DecodeBucket(batch, 64), 0);
}

TEST_F(BatchLayoutTest, PaddedDecodeLayoutsKeepTheRealRowsFirst) {
  auto a = Sequence(9), b = Sequence(2);  // 3 and 1 pages.
  const std::vector<int32_t> ta = {5}, tb = {8};
  const std::vector<model::SequenceInput> batch = {{ta, 8, a.get()}, {tb, 1, b.get()}};
  auto layout = LayOutBatch(batch, 4, 16);
  ASSERT_TRUE(layout.ok()) << layout.status();
  ASSERT_TRUE(PadDecodeLayout(*layout, 4, 5, /*scratch_page=*/16).ok());
  EXPECT_EQ(layout->ids, (std::vector<int32_t>{5, 8, 0, 0}));
  EXPECT_EQ(layout->positions, (std::vector<int32_t>{8, 1, 0, 0}));
  EXPECT_EQ(layout->seq_of_token, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(layout->logit_rows, (std::vector<int32_t>{0, 1, 2, 3}));
  ASSERT_EQ(layout->max_pages, 5);
  ASSERT_EQ(layout->page_table.size(), 20u);
  for (int p = 0; p < 3; ++p) EXPECT_EQ(layout->page_table[p], a->pages()[p]);
  EXPECT_EQ(layout->page_table[5], b->pages()[0]);
  EXPECT_EQ(layout->page_table[10], 16);  // The dummy sequences write the scratch page.
  EXPECT_EQ(layout->page_table[15], 16);
  auto again = LayOutBatch(batch, 4, 16);
  EXPECT_FALSE(PadDecodeLayout(*again, 4, 2, 16).ok());  // 3 pages do not fit in 2.
  EXPECT_FALSE(PadDecodeLayout(*again, 1, 5, 16).ok());  // 2 sequences in a bucket of 1.
}

TEST_F(BatchLayoutTest, TheEmptyBatchHasNoRows) {
  auto layout = LayOutBatch({}, 4, 16);
  ASSERT_TRUE(layout.ok());
  EXPECT_TRUE(layout->ids.empty());
  EXPECT_EQ(layout->max_pages, 0);
}

TEST_F(BatchLayoutTest, ErrorsNameTheSequence) {
  auto a = Sequence(4);
  const std::vector<int32_t> t = {1};
  model::UnpagedKvSequence dense(4);
  auto unpaged = LayOutBatch({{t, 0, a.get()}, {t, 0, &dense}}, 4, 16);
  EXPECT_EQ(unpaged.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unpaged.status().message().find("sequence 1: the forward needs a paged KV"),
            std::string::npos)
      << unpaged.status();
  auto wrong_size = LayOutBatch({{t, 0, a.get()}}, 8, 16);  // The host pages hold 4.
  EXPECT_NE(wrong_size.status().message().find("pages of 8 positions"), std::string::npos);
  auto outside = LayOutBatch({{t, 0, a.get()}}, 4, a->pages()[0]);  // A smaller GPU arena.
  EXPECT_NE(outside.status().message().find("is outside the forward's cache"), std::string::npos)
      << outside.status();
}

}  // namespace
}  // namespace semmoe::engine::forward
