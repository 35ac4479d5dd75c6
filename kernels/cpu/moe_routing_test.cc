#include "kernels/cpu/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "gtest/gtest.h"

namespace semmoe::kernels::cpu {
namespace {

TEST(MoeRoutingTest, GatingPicksTheTopKOfTheSoftmaxAndRenormalises) {
  const float logits[] = {0.0f, 2.0f, 1.0f, 2.0f};  // One token, 4 experts; a tie at 2.
  int32_t ids[2];
  float w[2];
  RouterGating({.logits = logits,
                .tokens = 1,
                .experts = 4,
                .k = 2,
                .renormalize = false,
                .ids = ids,
                .weights = w});
  EXPECT_EQ(ids[0], 1);  // Ties: lower id first.
  EXPECT_EQ(ids[1], 3);
  const float z = 1 + 2 * std::exp(2.0f) + std::exp(1.0f);
  EXPECT_NEAR(w[0], std::exp(2.0f) / z, 1e-6);
  RouterGating({.logits = logits,
                .tokens = 1,
                .experts = 4,
                .k = 2,
                .renormalize = true,
                .ids = ids,
                .weights = w});
  EXPECT_NEAR(w[0], 0.5f, 1e-6);
  EXPECT_NEAR(w[0] + w[1], 1.0f, 1e-6);
}

// DeepSeek-V3's rule by hand: sigmoid scores, the bias only choosing, the best two of four
// groups by the sum of their two best, weights renormalised and scaled.
TEST(MoeRoutingTest, GroupLimitedBiasedSigmoidGating) {
  // 8 experts in 4 groups of 2. Logits chosen so the bias moves expert 1 past expert 6.
  const float logits[] = {0.0f, 1.0f, -2.0f, -2.0f, 0.5f, 0.4f, 1.5f, -3.0f};
  const float bias[] = {0, 1.0f, 0, 0, 0, 0, 0, 0};
  auto sig = [](float v) { return 1.0f / (1.0f + std::exp(-v)); };
  int32_t ids[2];
  float w[2];
  RouterGatingArgs a{.logits = logits,
                     .tokens = 1,
                     .experts = 8,
                     .k = 2,
                     .renormalize = true,
                     .ids = ids,
                     .weights = w,
                     .scoring = GateScoring::kSigmoid,
                     .bias = bias,
                     .groups = 4,
                     .topk_groups = 2,
                     .group_score = GroupScore::kTopTwoSum,
                     .renormalize_epsilon = 1e-20f,
                     .scale = 2.5f};
  // Group sums of choice (score + bias): g0 = σ(0) + σ(1) + 1, g1 ≈ 2σ(−2), g2 = σ(.5) + σ(.4),
  // g3 = σ(1.5) + σ(−3): g0 and g2 are kept (g3's 0.86 + 0.05 < g2's 0.62 + 0.60).
  RouterGating(a);
  EXPECT_EQ(ids[0], 1);  // σ(1) + 1 beats every other choice.
  EXPECT_EQ(ids[1], 4);  // Expert 6 (σ(1.5)) is in a dropped group.
  const float sum = sig(1.0f) + sig(0.5f);
  EXPECT_FLOAT_EQ(w[0], sig(1.0f) / sum * 2.5f);  // Unbiased score, renormalised, scaled.
  EXPECT_FLOAT_EQ(w[1], sig(0.5f) / sum * 2.5f);
  // Group max (V2's group_limited_greedy) keeps g0 (1.73) and g3 (0.82) instead.
  a.group_score = GroupScore::kMax;
  RouterGating(a);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 6);
  // No renormalisation: the scores times the scale.
  a.renormalize = false;
  RouterGating(a);
  EXPECT_FLOAT_EQ(w[1], sig(1.5f) * 2.5f);
}

TEST(MoeRoutingTest, PermutationIsAStableCountingSortAndCombineInvertsIt) {
  // 3 tokens, k = 2, 4 experts (expert 2 unused).
  const int32_t ids[] = {1, 0, 3, 1, 0, 1};
  std::vector<int64_t> counts(4), offsets(5), eop(6), poe(6);
  PermuteByExpert({.ids = ids,
                   .entries = 6,
                   .experts = 4,
                   .counts = counts.data(),
                   .offsets = offsets.data(),
                   .entry_of_position = eop.data(),
                   .position_of_entry = poe.data()});
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 2, 5, 5, 6}));
  EXPECT_EQ(counts, (std::vector<int64_t>{2, 3, 0, 1}));
  EXPECT_EQ(eop, (std::vector<int64_t>{1, 4, 0, 3, 5, 2}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(eop[poe[i]], i);
  // Rows out and back: with weights 1 and identity experts, each token gets k × itself.
  const float x[] = {1, 10, 2, 20, 3, 30};  // hidden 2
  std::vector<float> y(12), out(6);
  GatherRows(
      {.x = x, .entry_of_position = eop.data(), .entries = 6, .k = 2, .hidden = 2, .y = y.data()});
  EXPECT_EQ(y[0], 1.0f);      // Position 0 holds entry 1: token 0.
  EXPECT_EQ(y[2 * 4], 3.0f);  // Position 4 holds entry 5: token 2.
  const float w[] = {1, 1, 1, 1, 1, 1};
  CombineRows({.y = y.data(),
               .weights = w,
               .position_of_entry = poe.data(),
               .tokens = 3,
               .k = 2,
               .hidden = 2,
               .out = out.data()});
  EXPECT_EQ(out, (std::vector<float>{2, 20, 4, 40, 6, 60}));
}

TEST(MoeRoutingTest, ShufflePackAndUnpackAreInverse) {
  std::mt19937 rng(1);
  for (int64_t rows : {0, 1, 17}) {
    std::vector<int32_t> order(rows);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<float> x(rows * 3), packed(rows * 3), back(rows * 3);
    for (float& v : x) v = static_cast<float>(rng() % 100);
    ShufflePack(x.data(), order.data(), rows, 3, packed.data());
    ShuffleUnpack(packed.data(), order.data(), rows, 3, back.data());
    EXPECT_EQ(back, x);
    if (rows > 0) {
      EXPECT_EQ(packed[0], x[order[0] * 3]);
    }
  }
}

}  // namespace
}  // namespace semmoe::kernels::cpu
