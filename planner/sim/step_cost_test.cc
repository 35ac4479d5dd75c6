#include "planner/sim/step_cost.h"

#include "gtest/gtest.h"
#include "planner/sim/testing/fixtures.h"

namespace semmoe::planner::sim {
namespace {

using testing::RoundProfile;

ModelShape Tiny() { return testing::TinyShape(); }
ClusterProfile Simple() { return RoundProfile(); }

TEST(StepCostTest, ACollectiveIsItsLatencyPlusTheBusiestLinkOfTheSlowestRank) {
  const ClusterProfile p = Simple();
  const ModelShape s = Tiny();
  const Topology topo = *Topology::Nodes(2, 2);  // Ranks 0, 1 | 2, 3.
  const StepCost cost(s, p, topo);
  std::vector<double> bytes(16, 0);
  EXPECT_DOUBLE_EQ(cost.Collective(bytes), 1.0);  // Nothing to move: the latency.
  bytes[0 * 4 + 1] = 500;  // Inside node 0: 500 / (1000 × 0.5) = 1 s, one peer.
  EXPECT_DOUBLE_EQ(cost.Collective(bytes), 1.0 + 0.25 + 1.0);
  bytes[0 * 4 + 2] = 100;  // Across: 100 / (100 × 0.5) = 2 s on rank 0's NIC, a second peer.
  EXPECT_DOUBLE_EQ(cost.Collective(bytes), 1.0 + 0.5 + 2.0);
  bytes[1 * 4 + 3] = 100;  // Rank 1's own NIC: in parallel with rank 0's.
  EXPECT_DOUBLE_EQ(cost.Collective(bytes), 1.0 + 0.5 + 2.0);

  ClusterProfile shared = p;  // One link per node (the lab): both ranks' bytes share it.
  shared.inter_per_node = {1, "t"};
  const StepCost lab(s, shared, topo);
  EXPECT_DOUBLE_EQ(lab.Collective(bytes), 1.0 + 0.5 + 4.0);
}

TEST(StepCostTest, OperatorsAreRooflines) {
  const ClusterProfile p = Simple();
  const ModelShape s = Tiny();
  const Topology topo = *Topology::Flat(2);
  const StepCost cost(s, p, topo);
  EXPECT_DOUBLE_EQ(cost.Roofline(2e9, 0), 0.001 + 2.0);  // Compute-bound.
  EXPECT_DOUBLE_EQ(cost.Roofline(0, 3e6), 0.001 + 3.0);  // Memory-bound.
  // Attention, 1 decode with 9 positions before it: projections 2 × 1 × 400 FLOPs, scores
  // 2 × 10 × 2 heads × (5 + 5); streamed: 400 weights × 2 B + 10 positions × 20 values × 2 B.
  const AttentionWork w{.tokens = 1, .kv_read = 10, .attended = 10};
  EXPECT_DOUBLE_EQ(cost.Attention(w), 0.001 + std::max((800.0 + 400.0) / 1e9, 1200.0 / 1e6));
  EXPECT_DOUBLE_EQ(cost.Attention(w, 2), 0.001 + std::max(600.0 / 1e9, 600.0 / 1e6));
  EXPECT_EQ(cost.Attention(AttentionWork{}), 0);
}

TEST(StepCostTest, AMoeLayerWaitsForTheSlowestAndRunsTheBusiestExperts) {
  const ClusterProfile p = Simple();
  const ModelShape s = Tiny();
  const Topology topo = *Topology::Flat(2);
  const StepCost cost(s, p, topo);
  MoeTraffic t(2);
  t.rows = {0, 3, 0, 0};  // Rank 0 sends rank 1 three rows.
  t.expert_rows = {1, 5};
  t.active_experts = {1, 2};
  t.own_tokens = {4, 0};
  const MoeTime m = cost.Moe(t, {0.5, 0.2});
  EXPECT_DOUBLE_EQ(m.wait, 0.3);
  const double dispatch_row = 10 * 2 + 2 * 8, combine_row = 10 * 2;
  // Counts: 8 B each way inside the node; rows: 3 × 36 B one way.
  EXPECT_DOUBLE_EQ(m.dispatch, (1 + 0.25 + 8 / 500.0) + (1 + 0.25 + 3 * dispatch_row / 500.0));
  EXPECT_DOUBLE_EQ(m.combine, 1 + 0.25 + 3 * combine_row / 500.0);
  // Rank 1: 5 rows × 2 × 600 FLOPs; 2 experts × 600 weights × 2 B streamed — memory-bound.
  EXPECT_DOUBLE_EQ(m.experts, 0.001 + std::max(6000.0 / 1e9, 2400.0 / 1e6));
  EXPECT_DOUBLE_EQ(m.total(), m.wait + m.dispatch + m.experts + m.combine);
}

TEST(StepCostTest, TheHostsShareOfSharedCoresStretchesTheRanksWorkButNotTheLink) {
  ClusterProfile p = Simple();
  const ModelShape s = Tiny();
  const Topology topo = *Topology::Nodes(2, 2);
  p.host_cores = {2, "test"};
  p.shared_core_wait = {0.5, "test"};
  p.step_overhead = {0.1, "test"};
  p.host_cpu_per_request = {0.1, "test"};  // At 5 req/s half a core of the two: 4/3.
  EXPECT_DOUBLE_EQ(StepCost::StretchAt(p, 5), 2 / 1.5);
  EXPECT_DOUBLE_EQ(StepCost::StretchAt(p, 0), 1);
  EXPECT_DOUBLE_EQ(StepCost::StretchAt(p, 100), 10);  // The host's share capped at 90%.
  ClusterProfile gpu = p;
  gpu.host_cores = {0, "test"};
  EXPECT_DOUBLE_EQ(StepCost::StretchAt(gpu, 5), 1);

  const StepCost idle(s, p, topo), busy(s, p, topo, 5);
  const double k = 2 / 1.5;
  EXPECT_DOUBLE_EQ(busy.Roofline(2e9, 0), k * idle.Roofline(2e9, 0));
  EXPECT_DOUBLE_EQ(busy.SharedCoreWait(), k * idle.SharedCoreWait());
  EXPECT_DOUBLE_EQ(busy.StepOverhead(), k * 0.1);
  std::vector<double> bytes(16, 0);
  bytes[0 * 4 + 1] = 500;  // Inside node 0 (the host's copies): stretched with the latencies.
  EXPECT_DOUBLE_EQ(busy.Collective(bytes), k * (1.0 + 0.25 + 1.0));
  bytes[0 * 4 + 2] = 1000;  // Across: 20 s on the link, at its own rate.
  EXPECT_DOUBLE_EQ(busy.Collective(bytes), k * (1.0 + 0.5) + 20.0);
}

}  // namespace
}  // namespace semmoe::planner::sim
