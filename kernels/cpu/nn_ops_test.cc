#include "kernels/cpu/nn_ops.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::kernels::cpu {
namespace {

TEST(NnOpsTest, RmsNormMatchesTheFormula) {
  std::vector<float> x = {1, 2, 3, 4, /*row 2*/ 0, 0, 0, 0};
  std::vector<float> w = {1, 0.5f, 2, 1};
  RmsNorm({x.data(), 2, 4, 4, w.data(), 1e-6f});
  const float rms = std::sqrt((1 + 4 + 9 + 16) / 4.0f + 1e-6f);
  EXPECT_NEAR(x[0], 1 / rms, 1e-6);
  EXPECT_NEAR(x[1], 0.5f * 2 / rms, 1e-6);
  EXPECT_NEAR(x[2], 2 * 3 / rms, 1e-6);
  EXPECT_EQ(x[4], 0.0f);  // Zero rows stay finite thanks to eps.
}

TEST(NnOpsTest, RopeRotatesPairsAndKeepsNorms) {
  const int head_dim = 8, half = 4, max_pos = 16;
  std::vector<float> cos(max_pos * half), sin(max_pos * half);
  RopeTables(max_pos, head_dim, 10000.0, cos.data(), sin.data());
  EXPECT_FLOAT_EQ(cos[0], 1.0f);  // Position 0 is the identity.
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> original = x;
  int32_t pos = 5;
  ApplyRope({x.data(), 1, head_dim, 1, head_dim, &pos, cos.data(), sin.data()});
  // Pair (0, 4) rotates by angle 5 · 1.
  EXPECT_NEAR(x[0], 1 * std::cos(5.0) - 5 * std::sin(5.0), 1e-5);
  EXPECT_NEAR(x[4], 5 * std::cos(5.0) + 1 * std::sin(5.0), 1e-5);
  // Pair (3, 7) rotates by 5 · 10000^(-6/8).
  const double angle = 5 * std::pow(10000.0, -0.75);
  EXPECT_NEAR(x[3], 4 * std::cos(angle) - 8 * std::sin(angle), 1e-5);
  double n0 = 0, n1 = 0;
  for (int i = 0; i < 8; ++i) n0 += original[i] * original[i], n1 += x[i] * x[i];
  EXPECT_NEAR(n0, n1, 1e-3);
}

TEST(NnOpsTest, PartialRopeRotatesOnlyTheRotaryDimsOfEachHead) {
  // Two heads of 6 floats, the rotary part being the last 4 (MLA's [nope | rope]); rows 13 apart.
  const int rope = 4, half = 2, max_pos = 8;
  const std::vector<float> inv_freq = {1.0f, 0.25f};
  std::vector<float> cos(max_pos * half), sin(max_pos * half);
  RopeTablesFromInvFreq(max_pos, inv_freq, 2.0f, cos.data(), sin.data());
  EXPECT_FLOAT_EQ(cos[0], 2.0f);  // Scaled (YaRN's attention factor).
  for (bool interleaved : {true, false}) {
    std::vector<float> x(13);
    for (int i = 0; i < 13; ++i) x[i] = static_cast<float>(i + 1);
    const std::vector<float> original = x;
    int32_t pos = 3;
    ApplyPartialRope({.x = x.data() + 2, .rows = 1, .row_stride = 13, .heads = 2,
                      .head_stride = 6, .rope_dim = rope, .interleaved = interleaved,
                      .positions = &pos, .cos = cos.data(), .sin = sin.data()});
    for (int i : {0, 1, 6, 7, 12}) EXPECT_EQ(x[i], original[i]) << "not rotary: " << i;
    for (int head = 0; head < 2; ++head) {
      const int base = 2 + 6 * head;
      for (int f = 0; f < half; ++f) {
        // Frequency f's pair: (2f, 2f+1) interleaved, (f, f + 2) as halves.
        const int a = base + (interleaved ? 2 * f : f), b = interleaved ? a + 1 : a + half;
        const double angle = pos * inv_freq[f];
        EXPECT_NEAR(x[a], 2 * (original[a] * std::cos(angle) - original[b] * std::sin(angle)),
                    1e-5);
        EXPECT_NEAR(x[b], 2 * (original[b] * std::cos(angle) + original[a] * std::sin(angle)),
                    1e-5);
      }
    }
  }
}

TEST(NnOpsTest, SiluMul) {
  std::vector<float> g = {0.0f, 1.0f, -2.0f};
  std::vector<float> u = {3.0f, 2.0f, 1.0f};
  SiluMul(g.data(), u.data(), 3);
  EXPECT_FLOAT_EQ(g[0], 0.0f);
  EXPECT_NEAR(g[1], 2.0f / (1 + std::exp(-1.0f)), 1e-6);
  EXPECT_NEAR(g[2], -2.0f / (1 + std::exp(2.0f)), 1e-6);
}

TEST(NnOpsTest, CausalSoftmaxSeesOnlyPositionsUpToItsOwn) {
  // Two queries at positions 1 and 2 over 4 keys, rows 5 floats apart (the 5th untouched).
  std::vector<float> s = {0, 0, 7, 7, 9, /*row 2*/ 1, 1, 1, 7, 9};
  CausalSoftmax({.scores = s.data(), .rows = 2, .cols = 4, .row_stride = 5, .start = 1});
  EXPECT_THAT(s, ::testing::Pointwise(::testing::FloatNear(1e-6),
                                      std::vector<float>{0.5f, 0.5f, 0, 0, 9, 1 / 3.0f, 1 / 3.0f,
                                                         1 / 3.0f, 0, 9}));
}

TEST(NnOpsTest, RopeInvFreqIsHfs) {
  const std::vector<float> f = RopeInvFreq(8, 10000.0);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_FLOAT_EQ(f[3], static_cast<float>(std::pow(10000.0, -0.75)));
}

TEST(NnOpsTest, SoftmaxIsStableForLargeValues) {
  std::vector<float> row = {1000.0f, 1000.0f, 999.0f};
  Softmax(absl::MakeSpan(row));
  EXPECT_NEAR(row[0] + row[1] + row[2], 1.0f, 1e-6);
  EXPECT_NEAR(row[0], 1 / (2 + std::exp(-1.0f)), 1e-6);
}

TEST(NnOpsTest, TopKDescendingWithLowerIndexOnTies) {
  std::vector<float> v = {0.1f, 0.9f, 0.3f, 0.9f, 0.5f};
  int32_t ids[3];
  float vals[3];
  TopK(v, 3, ids, vals);
  EXPECT_THAT(ids, ::testing::ElementsAre(1, 3, 4));
  EXPECT_THAT(vals, ::testing::ElementsAre(0.9f, 0.9f, 0.5f));
  std::vector<int32_t> all_ids(5);
  std::vector<float> all_vals(5);
  TopK(v, 5, all_ids.data(), all_vals.data());
  EXPECT_THAT(all_ids, ::testing::ElementsAre(1, 3, 4, 2, 0));
}

}  // namespace
}  // namespace semmoe::kernels::cpu
