#include "planner/affinity/token_affinity.h"

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

TEST(TokenAffinityTest, ProbabilitiesMarginalAndScores) {
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0, 1};
  // Token 5 → experts (0, 2) then (1, 2); token 6 → (3, 3).
  ASSERT_TRUE(t.AddRequest("r", {5, 5, 6}, {0, 2, 1, 2, 3, 3}).ok());
  TokenAffinity a = TokenAffinity::FromTrace(t);
  EXPECT_DOUBLE_EQ(a.Probability(0, 5, 0), 0.5);
  EXPECT_DOUBLE_EQ(a.Probability(1, 5, 2), 1.0);
  EXPECT_DOUBLE_EQ(a.Probability(0, 6, 3), 1.0);
  EXPECT_FALSE(a.Seen(9));
  EXPECT_NEAR(a.Probability(0, 9, 0), 1.0 / 3, 1e-6);  // Layer-0 marginal: experts 0, 1, 3.
  auto p = Placement::Vanilla({0, 1}, 4, 2);           // 0,1 → device 0; 2,3 → device 1.
  std::vector<float> s = a.DpScores(*p, 10);
  EXPECT_FLOAT_EQ(s[5 * 2 + 0], 1.0f);  // Layer 0 fully on device 0, layer 1 on device 1.
  EXPECT_FLOAT_EQ(s[5 * 2 + 1], 1.0f);
  EXPECT_FLOAT_EQ(s[6 * 2 + 1], 2.0f);
  EXPECT_NEAR(s[9 * 2 + 0] + s[9 * 2 + 1], 2.0f, 1e-6);  // Unseen: marginals, mass 1 per layer.
}

}  // namespace
}  // namespace semmoe::planner
