#include "planner/affinity/prompt_scores.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

TEST(PromptScoresTest, SumsFlooredLogSharesOfKnownTokens) {
  // vocab 3, 2 devices. Token 0 is all on device 0; token 1 splits 3:1; token 2 is unseen (0s).
  const std::vector<float> s = {4, 0, 3, 1, 0, 0};
  const std::vector<int32_t> prompt = {0, 1, 2, 7, -1};
  std::vector<double> out(2);
  SumPromptLogTerms<int32_t>(prompt, PromptLogTerms(s, 2), 2, absl::MakeSpan(out));
  EXPECT_NEAR(out[0], std::log(1.0) + std::log(0.75), 1e-6);
  EXPECT_NEAR(out[1], std::log(0.01) + std::log(0.25), 1e-6);
}

TEST(PromptScoresTest, EmptyPromptScoresZero) {
  const std::vector<float> s = {1, 2};
  std::vector<double> out = {5, 5};
  SumPromptLogTerms<uint32_t>({}, PromptLogTerms(s, 2), 2, absl::MakeSpan(out));
  EXPECT_EQ(out, (std::vector<double>{0, 0}));
}

TEST(PromptSharesTest, MeansEachTokensRenormalisedShares) {
  // Token 0 all on device 0 (floored: 1 vs 0.01); token 1 3:1; token 2 unseen (uniform).
  const std::vector<float> s = {4, 0, 3, 1, 0, 0};
  const std::vector<int32_t> prompt = {0, 1, 2, 7, -1};
  std::vector<double> out(2);
  PromptShares<int32_t>(prompt, PromptLogTerms(s, 2), 2, absl::MakeSpan(out));
  const double zero = (1 / 1.01 + 0.75 + 0.5) / 3;
  EXPECT_NEAR(out[0], zero, 1e-6);
  EXPECT_NEAR(out[1], 1 - zero, 1e-6);
  PromptShares<int32_t>({}, PromptLogTerms(s, 2), 2, absl::MakeSpan(out));
  EXPECT_EQ(out, (std::vector<double>{0.5, 0.5}));  // Nothing known: uniform.
}

}  // namespace
}  // namespace semmoe::planner
