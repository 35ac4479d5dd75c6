#include "engine/parallel/shuffle.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"

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

TEST(ShuffleTest, TokensGoToTheirPredictedDeviceInBatchOrder) {
  const std::vector<int32_t> device = {1, 0, 1, 0};
  const std::vector<float> conf = {0.9f, 0.8f, 0.7f, 0.6f};
  const ShufflePlan plan = PlanShuffle(device, conf, 2);
  EXPECT_EQ(plan.counts, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(plan.order, (std::vector<int32_t>{1, 3, 0, 2}));
}

TEST(ShuffleTest, OverflowSpillsLeastConfidentToTheLeastFullRank) {
  // Everyone wants rank 0; chunks of 2, 1, 1 (3 ranks, 4 tokens... = 2,1,1).
  const std::vector<int32_t> device = {0, 0, 0, 0};
  const std::vector<float> conf = {0.1f, 0.9f, 0.5f, 0.7f};
  const ShufflePlan plan = PlanShuffle(device, conf, 3);
  EXPECT_EQ(plan.counts, (std::vector<int64_t>{2, 1, 1}));
  // Tokens 1 and 3 (most confident) stay on rank 0; 2 spills to rank 1, then 0 to rank 2.
  EXPECT_EQ(plan.order, (std::vector<int32_t>{1, 3, 2, 0}));
}

TEST(ShuffleTest, UnpredictedAndOutOfRangeDevicesStillGetAChunk) {
  const std::vector<int32_t> device = {-1, 7, 1, -1, 1};
  const std::vector<float> conf = {0.0f, 0.9f, 0.5f, 0.0f, 0.4f};
  const ShufflePlan plan = PlanShuffle(device, conf, 2);
  EXPECT_EQ(plan.counts, (std::vector<int64_t>{3, 2}));
  ExpectPermutation(plan, 5);
  EXPECT_EQ(plan.order[3], 2);  // Rank 1 holds its two predicted tokens.
  EXPECT_EQ(plan.order[4], 4);
}

TEST(ShuffleTest, RandomPredictionsAlwaysGiveBalancedPermutations) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int ranks = 1 + rng() % 8;
    const int64_t tokens = rng() % 50;
    std::vector<int32_t> device(tokens);
    std::vector<float> conf(tokens);
    for (int64_t t = 0; t < tokens; ++t) {
      device[t] = static_cast<int32_t>(rng() % (ranks + 1)) - 1;
      conf[t] = (rng() % 100) / 100.0f;
    }
    const ShufflePlan plan = PlanShuffle(device, conf, ranks);
    ExpectPermutation(plan, tokens);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(plan.counts[r], tokens / ranks + (r < tokens % ranks ? 1 : 0));
    }
  }
}

}  // namespace
}  // namespace semmoe::engine
