#include "engine/parallel/shuffle.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"
#include "planner/placement/balanced_assign.h"

namespace semmoe::engine {
namespace {

void ExpectPermutation(const ShufflePlan& plan, int64_t tokens) {
  std::vector<int32_t> sorted = plan.order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < tokens; ++i) ASSERT_EQ(sorted[i], i);
}

TEST(ShuffleTest, PlainIsBatchOrderInEqualChunks) {
  const ShufflePlan plan = PlainShuffle(10, 4);
  EXPECT_EQ(plan.counts, (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(plan.order, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(plan.begin(2), 6);
}

TEST(ShuffleTest, TokensGoToTheirBestDeviceInBatchOrder) {
  const std::vector<float> scores = {0.1f, 0.9f,   // t0 → 1
                                     0.8f, 0.2f,   // t1 → 0
                                     0.3f, 0.7f,   // t2 → 1
                                     0.6f, 0.4f};  // t3 → 0
  const ShufflePlan plan = PlanShuffle(scores, 2);
  EXPECT_EQ(plan.counts, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(plan.order, (std::vector<int32_t>{1, 3, 0, 2}));
}

TEST(ShuffleTest, OverflowGoesToTheNextBestDevice) {
  // 3 ranks, chunks 2, 1, 1. Everyone prefers rank 0; their second choices differ.
  const std::vector<float> scores = {0.5f, 0.1f, 0.4f,   // t0: least sure → spills, to 2
                                     0.9f, 0.1f, 0.0f,   // t1 → 0
                                     0.7f, 0.3f, 0.0f,   // t2: spills to 1 (its second)
                                     0.8f, 0.2f, 0.0f};  // t3 → 0
  const ShufflePlan plan = PlanShuffle(scores, 3);
  EXPECT_EQ(plan.counts, (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(plan.order, (std::vector<int32_t>{1, 3, 2, 0}));
}

TEST(ShuffleTest, RandomScoresAlwaysGiveBalancedPermutations) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int ranks = 1 + rng() % 8;
    const int64_t tokens = rng() % 50;
    std::vector<float> scores(tokens * ranks);
    for (float& s : scores) s = (rng() % 100) / 100.0f;
    const ShufflePlan plan = PlanShuffle(scores, ranks);
    ExpectPermutation(plan, tokens);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(plan.counts[r], tokens / ranks + (r < tokens % ranks ? 1 : 0));
    }
  }
}

TEST(ShuffleTest, SlackLetsAChunkGrowUpToItsCapacity) {
  // 8 tokens, 2 ranks, all prefer rank 0: with slack 0.25 rank 0 takes ⌊1.25 · 4⌋ = 5.
  std::vector<float> scores;
  for (int t = 0; t < 8; ++t) scores.insert(scores.end(), {0.9f - 0.01f * t, 0.1f});
  const ShufflePlan plan = PlanShuffle(scores, 2, 0.25);
  EXPECT_EQ(plan.counts, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(plan.order, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  ExpectPermutation(plan, 8);
}

TEST(ShuffleTest, RandomScoresWithSlackStayWithinCapacity) {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 200; ++trial) {
    const int ranks = 1 + rng() % 8;
    const int64_t tokens = rng() % 300;
    std::vector<float> scores(tokens * ranks);
    for (float& s : scores) s = (rng() % 100) / 100.0f;
    const ShufflePlan plan = PlanShuffle(scores, ranks, 0.05);
    ExpectPermutation(plan, tokens);
    const std::vector<int64_t> capacity = planner::ChunkCapacities(tokens, ranks, 0.05);
    int64_t sum = 0;
    for (int r = 0; r < ranks; ++r) {
      EXPECT_LE(plan.counts[r], capacity[r]);
      sum += plan.counts[r];
    }
    EXPECT_EQ(sum, tokens);
  }
}

}  // namespace
}  // namespace semmoe::engine
