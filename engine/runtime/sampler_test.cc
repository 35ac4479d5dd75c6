#include "engine/runtime/sampler.h"

#include <cmath>
#include <map>

#include "gtest/gtest.h"

namespace semmoe::engine::runtime {
namespace {

TEST(SamplerTest, GreedyTakesArgmaxLowestIdOnTies) {
  Sampler s({});
  std::vector<float> logits = {0.1f, 2.0f, 2.0f, -1.0f};
  EXPECT_EQ(s.Sample(logits), 1);
}

TEST(SamplerTest, SameSeedSameTokensOtherSeedDiffers) {
  std::vector<float> logits(50);
  for (int i = 0; i < 50; ++i) logits[i] = std::sin(i * 0.7f);
  SamplingParams p{.temperature = 1.0f, .seed = 42};
  Sampler a(p), b(p);
  p.seed = 43;
  Sampler c(p);
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 100; ++i) ta.push_back(a.Sample(logits)), tb.push_back(b.Sample(logits)),
                               tc.push_back(c.Sample(logits));
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

TEST(SamplerTest, FrequenciesFollowTheSoftmax) {
  std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  Sampler s({.temperature = 1.0f, .seed = 7});
  std::map<int32_t, int> counts;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++counts[s.Sample(logits)];
  EXPECT_NEAR(counts[0] / double(n), 0.5, 0.015);
  EXPECT_NEAR(counts[1] / double(n), 0.3, 0.015);
  EXPECT_NEAR(counts[2] / double(n), 0.2, 0.015);
}

TEST(SamplerTest, TopKAndTopPRestrictTheSupport) {
  std::vector<float> logits = {std::log(0.4f), std::log(0.3f), std::log(0.2f), std::log(0.1f)};
  Sampler k2({.temperature = 1.0f, .top_k = 2, .seed = 1});
  Sampler p65({.temperature = 1.0f, .top_p = 0.65f, .seed = 1});
  for (int i = 0; i < 2000; ++i) {
    EXPECT_LT(k2.Sample(logits), 2);
    EXPECT_LT(p65.Sample(logits), 2);  // 0.4 + 0.3 ≥ 0.65: two tokens.
  }
}

TEST(SamplerTest, LowTemperatureApproachesGreedy) {
  std::vector<float> logits = {1.0f, 1.5f, 0.5f};
  Sampler s({.temperature = 0.01f, .seed = 3});
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.Sample(logits), 1);
}

TEST(SamplerTest, ValidatesParams) {
  EXPECT_FALSE(ValidateSamplingParams({.temperature = -1}).ok());
  EXPECT_FALSE(ValidateSamplingParams({.temperature = NAN}).ok());
  EXPECT_FALSE(ValidateSamplingParams({.top_k = -2}).ok());
  EXPECT_FALSE(ValidateSamplingParams({.top_p = 0}).ok());
  EXPECT_FALSE(ValidateSamplingParams({.top_p = 1.5f}).ok());
  EXPECT_TRUE(ValidateSamplingParams({.temperature = 0.7f, .top_k = 50, .top_p = 0.9f}).ok());
}

}  // namespace
}  // namespace semmoe::engine::runtime
