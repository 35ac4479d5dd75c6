#include "planner/placement/hot_experts.h"

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

TEST(HotExpertsTest, TheTopKMostFirstTiesToTheLowerIdWithoutIdleExperts) {
  const std::vector<int64_t> a = {5, 0, 9, 5, 1, 0, 7};
  const std::vector<HotExpert> top = HottestExperts(a, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].expert, 2);
  EXPECT_EQ(top[0].activations, 9);
  EXPECT_EQ(top[1].expert, 6);
  EXPECT_EQ(top[2].expert, 0);  // 5 activations, as expert 3: the lower id first.
  EXPECT_EQ(HottestExperts(a, 100).size(), 5u);  // Experts 1 and 5 ran nothing.
  EXPECT_TRUE(HottestExperts(a, 0).empty());
  EXPECT_TRUE(HottestExperts({}, 4).empty());
}

// At a real expert count: 256 experts, the top 8 of a known ramp.
TEST(HotExpertsTest, TheTopOfARealExpertCount) {
  std::vector<int64_t> a(256);
  for (int e = 0; e < 256; ++e) a[e] = (e * 37) % 256;  // A permutation of 0..255.
  const std::vector<HotExpert> top = HottestExperts(a, 8);
  ASSERT_EQ(top.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(top[i].activations, 255 - i);
    EXPECT_EQ((top[i].expert * 37) % 256, 255 - i);
  }
}

TEST(HotExpertsTest, RanksAddUpExpertByExpert) {
  std::vector<int64_t> sum;
  AddActivations(std::vector<int64_t>{1, 2}, sum);
  AddActivations(std::vector<int64_t>{0, 3, 4}, sum);
  EXPECT_EQ(sum, (std::vector<int64_t>{1, 5, 4}));
}

}  // namespace
}  // namespace semmoe::planner
