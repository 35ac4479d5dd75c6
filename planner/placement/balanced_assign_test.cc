#include "planner/placement/balanced_assign.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

TEST(BalancedAssignTest, FavouritesWhileThereIsRoomThenTheNextBest) {
  // 4 tokens, 2 devices (2 each). All prefer device 0; token 2 is least sure.
  const std::vector<float> scores = {0.9f, 0.1f,   // t0
                                     0.8f, 0.2f,   // t1
                                     0.6f, 0.4f,   // t2
                                     0.7f, 0.3f};  // t3
  EXPECT_EQ(AssignBalanced(scores, 2), (std::vector<int32_t>{0, 0, 1, 1}));
}

TEST(BalancedAssignTest, SpillsToTheSecondChoiceNotTheLeastFull) {
  // 3 devices, 3 tokens: two want device 0 (second choice 2); device 1 is nobody's choice.
  const std::vector<float> scores = {0.7f, 0.0f, 0.3f,   // t0
                                     0.6f, 0.1f, 0.3f,   // t1 spills to 2 (0.3 > 0.1)
                                     0.2f, 0.5f, 0.3f};  // t2
  EXPECT_EQ(AssignBalanced(scores, 3), (std::vector<int32_t>{0, 2, 1}));
}

TEST(BalancedAssignTest, NoPreferenceGoesToTheLeastFull) {
  const std::vector<float> scores = {1.0f, 0.0f, 0.0f,  // t0 → 0
                                     0.0f, 0.0f, 0.0f,  // t1: all equal → most room (1)
                                     0.0f, 0.0f, 0.0f};
  EXPECT_EQ(AssignBalanced(scores, 3), (std::vector<int32_t>{0, 1, 2}));
}

TEST(BalancedAssignTest, AlwaysEqualChunks) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 300; ++trial) {
    const int g = 1 + rng() % 8;
    const int tokens = rng() % 60;
    std::vector<float> scores(tokens * g);
    for (float& s : scores) s = (rng() % 5) / 4.0f;
    const std::vector<int32_t> device = AssignBalanced(scores, g);
    std::vector<int64_t> counts(g, 0);
    for (int32_t d : device) {
      ASSERT_GE(d, 0);
      ASSERT_LT(d, g);
      ++counts[d];
    }
    EXPECT_EQ(counts, EqualChunks(tokens, g));
  }
}

TEST(BalancedAssignTest, SlackLetsFavouritesTakeUpToTheCapacity) {
  // 8 tokens, 2 devices, all prefer device 0: equal chunks give 4 + 4; slack 0.25 lets device 0
  // take ⌊1.25 · 4⌋ = 5.
  std::vector<float> scores;
  for (int t = 0; t < 8; ++t) scores.insert(scores.end(), {0.9f - 0.01f * t, 0.1f});
  const std::vector<int32_t> tight = AssignBalanced(scores, 2);
  const std::vector<int32_t> loose = AssignBalanced(scores, 2, 0.25);
  EXPECT_EQ(std::count(tight.begin(), tight.end(), 0), 4);
  EXPECT_EQ(std::count(loose.begin(), loose.end(), 0), 5);
  // The 5 most confident stay on 0.
  EXPECT_EQ(loose, (std::vector<int32_t>{0, 0, 0, 0, 0, 1, 1, 1}));
}

TEST(BalancedAssignTest, CapacitiesNeverExceededAndCoverAllTokens) {
  EXPECT_EQ(ChunkCapacities(10, 3, 0), (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(ChunkCapacities(10, 3, 0.05), (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(ChunkCapacities(256, 8, 0.05), std::vector<int64_t>(8, 33));
  EXPECT_EQ(ChunkCapacities(0, 4, 0.05), std::vector<int64_t>(4, 0));
  std::mt19937 rng(2);
  for (int trial = 0; trial < 300; ++trial) {
    const int g = 1 + rng() % 8;
    const int tokens = rng() % 300;
    const double slack = (rng() % 4) * 0.05;
    std::vector<float> scores(tokens * g);
    for (float& s : scores) s = (rng() % 5) / 4.0f;
    const std::vector<int64_t> capacity = ChunkCapacities(tokens, g, slack);
    std::vector<int64_t> counts(g, 0);
    for (int32_t d : AssignBalanced(scores, g, slack)) {
      ASSERT_GE(d, 0);
      ASSERT_LT(d, g);
      ++counts[d];
    }
    for (int d = 0; d < g; ++d) {
      EXPECT_LE(counts[d], capacity[d]);
      EXPECT_LE(counts[d], std::max<double>((1 + slack) * tokens / g, (tokens + g - 1) / g));
    }
  }
}

}  // namespace
}  // namespace semmoe::planner
