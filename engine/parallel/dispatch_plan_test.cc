#include "engine/parallel/dispatch_plan.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::engine {
namespace {

using ::testing::ElementsAre;

// 8 experts on 4 devices (2 each: expert e on device e / 2), one MoE layer; device 0 also holds
// a replica of expert 7 (home: device 3).
planner::Placement TestPlacement() {
  auto vanilla = planner::Placement::Vanilla({0}, 8, 4);
  EXPECT_TRUE(vanilla.ok());
  auto p = vanilla->WithReplicas({{{7}, {0}, {0}, {0}}});
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

TEST(DispatchPlanTest, RowsGoOncePerServingRankInRankOrder) {
  const planner::Placement placement = TestPlacement();
  // Rank 0's three tokens, top-2: t0 → {0, 1} (both local), t1 → {2, 7} (device 1; 7 by the
  // local replica), t2 → {6, 4} (devices 3 and 2).
  const std::vector<int32_t> ids = {0, 1, 2, 7, 6, 4};
  const std::vector<float> weights = {0.6f, 0.4f, 0.7f, 0.3f, 0.5f, 0.5f};
  const DispatchPlan plan = PlanDispatch(placement, 0, /*rank=*/0, /*top_k=*/2, ids, weights);

  EXPECT_EQ(plan.served_elsewhere, 8);
  EXPECT_THAT(plan.send_rows, ElementsAre(2, 1, 1, 1));
  // Rank 0: t0 and t1; rank 1: t1; rank 2: t2; rank 3: t2.
  EXPECT_THAT(plan.send_index, ElementsAre(0, 1, 1, 2, 2));
  EXPECT_THAT(plan.send_ids, ElementsAre(0, 1,    // t0 to rank 0: both its own
                                         8, 7,    // t1 to rank 0: expert 7 (replica)
                                         2, 8,    // t1 to rank 1: expert 2
                                         8, 4,    // t2 to rank 2: expert 4
                                         6, 8));  // t2 to rank 3: expert 6
  EXPECT_THAT(plan.send_weights,
              ElementsAre(0.6f, 0.4f, 0.7f, 0.3f, 0.7f, 0.3f, 0.5f, 0.5f, 0.5f, 0.5f));
  EXPECT_THAT(plan.local_per_token, ElementsAre(2, 1, 0));
  EXPECT_EQ(plan.local_activations, 3);
  EXPECT_EQ(plan.remote_activations, 3);
  // Homes: t0 {0, 0} → 0; t1 {1, 3} → 1 (lowest on a tie); t2 {3, 2} → 2.
  EXPECT_THAT(plan.home_device, ElementsAre(0, 1, 2));
}

TEST(DispatchPlanTest, TheReplicaIsOnlyTheHoldersOwn) {
  const planner::Placement placement = TestPlacement();
  // On rank 1, expert 7 is served by its home (device 3), not by rank 0's replica.
  const DispatchPlan plan = PlanDispatch(placement, 0, /*rank=*/1, 2, {7, 3}, {0.5f, 0.5f});
  EXPECT_THAT(plan.send_rows, ElementsAre(0, 1, 0, 1));
  EXPECT_THAT(plan.send_ids, ElementsAre(8, 3, 7, 8));
  EXPECT_THAT(plan.local_per_token, ElementsAre(1));
}

TEST(DispatchPlanTest, AHolderChoiceSendsAnExpertsActivationsToItsHoldersInTokenOrder) {
  const planner::Placement placement = TestPlacement();  // Expert 7: home 3, replica on 0.
  // Rank 1, top-1: three tokens for expert 7, one for its own expert 2.
  const std::vector<int32_t> ids = {7, 7, 7, 2};
  const std::vector<float> weights = {1, 1, 1, 1};
  std::vector<int32_t> demand(4 * 8, 0);
  demand[1 * 8 + 7] = 3;
  demand[1 * 8 + 2] = 1;
  // Device 3 busy with its own expert 6: all three go to the replica on device 0.
  demand[3 * 8 + 6] = 10;
  planner::HolderChoice busy = planner::ChooseHolders(placement, 0, demand);
  DispatchPlan plan = PlanDispatch(placement, 0, /*rank=*/1, 1, ids, weights, &busy);
  EXPECT_THAT(plan.send_rows, ElementsAre(3, 1, 0, 0));
  EXPECT_THAT(plan.send_index, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(plan.send_ids, ElementsAre(7, 7, 7, 2));
  EXPECT_EQ(plan.local_activations, 1);
  EXPECT_EQ(plan.remote_activations, 3);
  // Device 3 as loaded as device 1: shares {home 1, replica 2}, the first token to the home.
  demand[3 * 8 + 6] = 1;
  planner::HolderChoice even = planner::ChooseHolders(placement, 0, demand);
  ASSERT_THAT(even.Shares(1, 7), ElementsAre(1, 2));
  plan = PlanDispatch(placement, 0, /*rank=*/1, 1, ids, weights, &even);
  EXPECT_THAT(plan.send_rows, ElementsAre(2, 1, 0, 1));
  EXPECT_THAT(plan.send_index, ElementsAre(1, 2, 3, 0));
  // Without a choice, the home.
  plan = PlanDispatch(placement, 0, /*rank=*/1, 1, ids, weights);
  EXPECT_THAT(plan.send_rows, ElementsAre(0, 1, 0, 3));
}

TEST(DispatchPlanTest, DispatchRowsAreThePlansRowCounts) {
  const planner::Placement placement = TestPlacement();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> expert(0, 7);
  for (int trial = 0; trial < 50; ++trial) {
    const int k = 1 + trial % 3, tokens = trial % 9;  // Repeated experts within a token too.
    std::vector<std::vector<int32_t>> ids(4);
    std::vector<int32_t> demand(4 * 8, 0);
    for (int r = 0; r < 4; ++r) {
      for (int i = 0; i < tokens * k; ++i) ids[r].push_back(expert(rng));
      for (int32_t e : ids[r]) ++demand[r * 8 + e];
    }
    const planner::HolderChoice choice = planner::ChooseHolders(placement, 0, demand);
    for (int r = 0; r < 4; ++r) {
      const std::vector<float> weights(ids[r].size(), 1.0f);
      EXPECT_EQ(DispatchRows(placement, 0, r, k, ids[r]),
                PlanDispatch(placement, 0, r, k, ids[r], weights).send_rows)
          << "trial " << trial << ", rank " << r;
      EXPECT_EQ(DispatchRows(placement, 0, r, k, ids[r], &choice),
                PlanDispatch(placement, 0, r, k, ids[r], weights, &choice).send_rows)
          << "trial " << trial << ", rank " << r << ", with the choice";
    }
  }
}

TEST(DispatchPlanTest, NoTokensPlanNothing) {
  const DispatchPlan plan = PlanDispatch(TestPlacement(), 0, 2, 2, {}, {});
  EXPECT_THAT(plan.send_rows, ElementsAre(0, 0, 0, 0));
  EXPECT_TRUE(plan.send_index.empty());
  EXPECT_TRUE(plan.home_device.empty());
}

TEST(DispatchPlanTest, OneByteCountingRuleForBothDirections) {
  EXPECT_EQ(DispatchRowBytes(/*hidden=*/64, /*top_k=*/4), 64 * 4 + 4 * 8);
  EXPECT_EQ(CombineRowBytes(64), 64 * 4);
  const planner::Placement placement = TestPlacement();
  const DispatchPlan plan =
      PlanDispatch(placement, 0, 0, 2, {0, 1, 2, 7, 6, 4}, {1, 1, 1, 1, 1, 1});
  MoeLayerCounters c;
  const std::vector<int64_t> recv_rows = {2, 3, 0, 1};  // From ranks 0..3 (own: not counted).
  CountExchange(plan, recv_rows, /*rank=*/0, /*hidden=*/64, c);
  const int64_t d = 64 * 4 + 2 * 8, r = 64 * 4;
  EXPECT_EQ(c.tokens, 3);
  EXPECT_EQ(c.local_activations, 3);
  EXPECT_EQ(c.remote_activations, 3);
  EXPECT_EQ(c.dispatch_bytes_sent, 3 * d);      // One row each to ranks 1, 2, 3.
  EXPECT_EQ(c.dispatch_bytes_received, 4 * d);  // 3 + 0 + 1 rows from peers.
  EXPECT_EQ(c.combine_bytes_sent, 4 * r);       // Results of the rows received.
  EXPECT_EQ(c.combine_bytes_received, 3 * r);   // Results of the rows sent.
  // Per peer: its dispatched rows and the results of its rows received.
  EXPECT_THAT(c.bytes_to_peer, ElementsAre(0, d + 3 * r, d, d + r));
}

}  // namespace
}  // namespace semmoe::engine
