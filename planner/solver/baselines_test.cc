#include "planner/solver/baselines.h"

#include <random>

#include "gtest/gtest.h"
#include "planner/eval/evaluate.h"

namespace semmoe::planner {
namespace {

using trace::TraceSet;

// One layer, 8 experts, top-2. Tokens pick pairs from planted groups {0,5,2,7} and {1,4,3,6},
// with expert 0 far busier than the rest.
TraceSet Skewed() {
  std::mt19937 rng(4);
  TraceSet t;
  t.header.num_experts = 8;
  t.header.top_k = 2;
  t.header.moe_layers = {0};
  const int groups[2][4] = {{0, 5, 2, 7}, {1, 4, 3, 6}};
  std::vector<uint32_t> tokens;
  std::vector<uint16_t> experts;
  for (int i = 0; i < 400; ++i) {
    const int* grp = groups[i % 2];
    const int a = (i % 2 == 0 && i % 3 == 0) ? 0 : grp[rng() % 4];
    int b = grp[rng() % 4];
    while (b == a) b = grp[rng() % 4];
    tokens.push_back(i % 50);
    experts.push_back(a);
    experts.push_back(b);
  }
  EXPECT_TRUE(t.AddRequest("r", tokens, experts).ok());
  return t;
}

TEST(BaselinesTest, EplbBalancesExpertLoad) {
  TraceSet t = Skewed();
  auto eplb = EplbPlacement(t, 2);
  ASSERT_TRUE(eplb.ok()) << eplb.status();
  auto vanilla = Placement::Vanilla({0}, 8, 2);
  const double e = EvaluateDp(t, *eplb, {0})->expert_load_imbalance;
  const double v = EvaluateDp(t, *vanilla, {0})->expert_load_imbalance;
  EXPECT_LT(e, v);
  EXPECT_LT(e, 1.1);
}

TEST(BaselinesTest, EplbReplicasCopyTheHeaviestExpertsWhereTheLoadIsLeast) {
  TraceSet t = Skewed();
  auto homes = EplbPlacement(t, 4);
  ASSERT_TRUE(homes.ok()) << homes.status();
  auto replicated = EplbReplicas(t, *homes, 1);
  ASSERT_TRUE(replicated.ok()) << replicated.status();
  EXPECT_EQ(replicated->replicas_per_device(), 1);
  // Expert 0, the busiest by far, is copied first, onto the least-loaded device lacking it.
  ASSERT_GE(replicated->HoldersOf(0, 0).size(), 2u);
  // Tokens spread evenly over the devices (the trace is one request): under the holder choice
  // the copies lower the modelled expert-load imbalance.
  const auto chunks = ContiguousChunks(t, 4, 400);
  auto without = EvaluateTp(t, *homes, chunks);
  auto with = EvaluateTp(t, *replicated, chunks);
  ASSERT_TRUE(without.ok() && with.ok());
  EXPECT_LT(with->expert_load_imbalance, without->expert_load_imbalance);
  EXPECT_FALSE(EplbReplicas(t, *homes, 7).ok());  // More than N − N/G = 6.
  EXPECT_FALSE(EplbReplicas(t, *homes, -1).ok());
  EXPECT_TRUE(EplbReplicas(t, *homes, 6).ok());  // Every device holds every expert.
}

TEST(BaselinesTest, CoactRecoversCoactivatedGroups) {
  TraceSet t = Skewed();
  auto coact = CoactPlacement(t, 2);
  ASSERT_TRUE(coact.ok()) << coact.status();
  EXPECT_EQ(coact->Device(0, 0), coact->Device(0, 5));
  EXPECT_EQ(coact->Device(0, 0), coact->Device(0, 2));
  EXPECT_EQ(coact->Device(0, 0), coact->Device(0, 7));
  EXPECT_NE(coact->Device(0, 0), coact->Device(0, 1));
  // Each token's two experts share a device: the TP oracle is perfect.
  EXPECT_DOUBLE_EQ(TpTokenOracle(t, *coact), 1.0);
}

TEST(BaselinesTest, Errors) {
  TraceSet t = Skewed();
  EXPECT_FALSE(EplbPlacement(t, 3).ok());
  EXPECT_FALSE(CoactPlacement(t, 0).ok());
}

}  // namespace
}  // namespace semmoe::planner
