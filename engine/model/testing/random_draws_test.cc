#include "engine/model/testing/random_draws.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace semmoe::testing {
namespace {

TEST(RandomDrawsTest, NormalDrawsAreSeededAndHaveTheirMoments) {
  constexpr int64_t kN = 200000;
  std::vector<float> a(kN), b(kN), c(kN);
  RandomDraws(7).FillNormal(a.data(), kN, 1.5f, 0.25f);
  RandomDraws(7).FillNormal(b.data(), kN, 1.5f, 0.25f);
  RandomDraws(8).FillNormal(c.data(), kN, 1.5f, 0.25f);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double sum = 0, squares = 0;
  for (float v : a) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
  }
  const double mean = sum / kN;
  for (float v : a) squares += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 1.5, 0.005);  // 4 standard errors: 4 · 0.25 / √N.
  EXPECT_NEAR(std::sqrt(squares / kN), 0.25, 0.002);
  // One draw at a time is the same stream.
  RandomDraws one(7);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(one.Normal(1.5f, 0.25f), a[i]);
}

TEST(RandomDrawsTest, UniformFillIsTheSameStreamWhateverTheSplitOrThreads) {
  // Over 2^20 values the fill runs on every core; split in two calls it is the same stream.
  constexpr int64_t kN = (1 << 20) + 12345, kFirst = 1000;
  std::vector<float> whole(kN), split(kN);
  RandomDraws(3).FillUniform(whole.data(), kN, 0.0f, 0.08f);
  RandomDraws parts(3);
  parts.FillUniform(split.data(), kFirst, 0.0f, 0.08f);
  parts.FillUniform(split.data() + kFirst, kN - kFirst, 0.0f, 0.08f);
  EXPECT_EQ(whole, split);
  const float bound = 0.08f * std::sqrt(3.0f);
  double sum = 0, squares = 0;
  for (float v : whole) {
    ASSERT_GE(v, -bound);
    ASSERT_LT(v, bound);
    sum += v;
    squares += double{v} * v;
  }
  EXPECT_NEAR(sum / kN, 0.0, 0.0005);
  EXPECT_NEAR(std::sqrt(squares / kN), 0.08, 0.0005);
}

}  // namespace
}  // namespace semmoe::testing
