#include "planner/solver/balance_curve.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

using trace::TraceSet;

// Four topics of requests, each using only its own 4 of 16 experts, with its own vocabulary;
// topic 0 has three times the requests of each other, so co-locating topics overloads the
// device that holds topic 0's experts.
TraceSet UnequalTopics(uint64_t seed) {
  std::mt19937 rng(seed);
  TraceSet t;
  t.header.num_experts = 16;
  t.header.top_k = 2;
  t.header.moe_layers = {0, 1};
  for (int r = 0; r < 60; ++r) {
    const int topic = r % 6 < 3 ? 0 : r % 6 - 2;
    std::vector<uint32_t> tokens;
    std::vector<uint16_t> experts;
    for (int i = 0; i < 10; ++i) {
      tokens.push_back(topic * 100 + rng() % 20);
      for (int l = 0; l < 2; ++l) {
        const int a = rng() % 4, b = (a + 1 + rng() % 3) % 4;
        experts.push_back(topic * 4 + a);
        experts.push_back(topic * 4 + b);
      }
    }
    EXPECT_TRUE(t.AddRequest("r" + std::to_string(r), tokens, experts).ok());
  }
  return t;
}

TEST(BalanceCurveTest, TradesLarForBalanceAndTheTimeModelChooses) {
  const TraceSet t = UnequalTopics(1);
  const DpSolverOptions solver{.num_devices = 4, .token_balance_eps = 0.5, .seed = 1};
  auto curve = TraceBalanceCurve(t, solver, {.num_devices = 4, .token_balance_eps = 0.5});
  ASSERT_TRUE(curve.ok()) << curve.status();
  ASSERT_EQ(curve->points.size(), 5u);
  const BalancePoint& off = curve->points[0];
  EXPECT_EQ(off.eps, -1);
  EXPECT_GT(off.profile.expert_load_imbalance, 1.3);
  for (size_t i = 1; i < curve->points.size(); ++i) {
    const BalancePoint& p = curve->points[i];
    EXPECT_LT(p.profile.expert_load_imbalance, off.profile.expert_load_imbalance) << p.eps;
    EXPECT_LE(p.profile.lar, off.profile.lar + 1e-9) << p.eps;
  }
  EXPECT_LE(curve->points.back().profile.expert_load_imbalance, 1.1);

  // Free links: only expert load counts, so a balanced point wins. Costly links: locality wins.
  auto compute_bound =
      TraceBalanceCurve(t, solver, {.num_devices = 4, .token_balance_eps = 0.5, .link_cost = 0});
  ASSERT_TRUE(compute_bound.ok());
  EXPECT_GE(compute_bound->points[compute_bound->chosen].eps, 0);
  auto link_bound = TraceBalanceCurve(
      t, solver, {.num_devices = 4, .token_balance_eps = 0.5, .link_cost = 1000});
  ASSERT_TRUE(link_bound.ok());
  EXPECT_EQ(link_bound->points[link_bound->chosen].eps, -1);
}

TEST(BalanceCurveTest, NeedsTwoRequests) {
  TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0};
  ASSERT_TRUE(t.AddRequest("r", {1}, {0}).ok());
  EXPECT_FALSE(TraceBalanceCurve(t, {.num_devices = 2}, {.num_devices = 2}).ok());
}

}  // namespace
}  // namespace semmoe::planner
