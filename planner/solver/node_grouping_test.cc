#include "planner/solver/node_grouping.h"

#include <random>

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

TEST(NodeGroupingTest, RankTrafficCountsOneRowPerRemoteRank) {
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 2;
  t.header.moe_layers = {0};
  ASSERT_TRUE(t.AddRequest("r", {1, 2}, {2, 3, 0, 2}).ok());
  auto p = Placement::Vanilla({0}, 4, 2);  // 0, 1 → device 0; 2, 3 → device 1.
  auto traffic = RankTraffic(t, *p, {{0, 0}});
  ASSERT_TRUE(traffic.ok()) << traffic.status();
  // Token 0 sends one row to device 1 (experts 2 and 3 both there); token 1 one.
  EXPECT_EQ(*traffic, (std::vector<int64_t>{0, 2, 0, 0}));
  EXPECT_FALSE(RankTraffic(t, *p, {{0}}).ok());
  EXPECT_FALSE(RankTraffic(t, *p, {{0, 5}}).ok());
}

TEST(NodeGroupingTest, PairsThatTalkShareANode) {
  // 4 ranks: 0 ↔ 2 and 1 ↔ 3 exchange much, the rest little; on 2 × 2 the identity puts 0, 1 on
  // node 0. The grouping must put 0 with 2 and 1 with 3.
  const int g = 4;
  std::vector<int64_t> traffic(g * g, 1);
  for (int a = 0; a < g; ++a) traffic[a * g + a] = 0;
  traffic[0 * g + 2] = traffic[2 * g + 0] = 100;
  traffic[1 * g + 3] = traffic[3 * g + 1] = 90;
  auto topo = Topology::Parse("2x2");
  auto relabel = NodeGrouping(traffic, *topo);
  ASSERT_TRUE(relabel.ok()) << relabel.status();
  EXPECT_TRUE(topo->SameNode((*relabel)[0], (*relabel)[2]));
  EXPECT_TRUE(topo->SameNode((*relabel)[1], (*relabel)[3]));
  std::vector<int> identity = {0, 1, 2, 3};
  EXPECT_LT(PlacedTrafficCost(traffic, *topo, *relabel),
            PlacedTrafficCost(traffic, *topo, identity));
  EXPECT_FALSE(NodeGrouping({1, 2, 3}, *topo).ok());
}

TEST(NodeGroupingTest, NeverWorseThanTheIdentityAndAPermutation) {
  std::mt19937 rng(38);
  for (const char* spec : {"2x4", "4x2", "2x8", "8x1", "1x8"}) {
    auto topo = Topology::Parse(spec);
    const int g = topo->num_ranks();
    std::vector<int64_t> traffic(g * g);
    for (int a = 0; a < g; ++a) {
      for (int b = 0; b < g; ++b) traffic[a * g + b] = a == b ? 0 : rng() % 1000;
    }
    auto relabel = NodeGrouping(traffic, *topo, {.seed = 3});
    ASSERT_TRUE(relabel.ok());
    std::vector<int> sorted = *relabel, identity(g);
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < g; ++i) identity[i] = i;
    EXPECT_EQ(sorted, identity) << spec;
    EXPECT_LE(PlacedTrafficCost(traffic, *topo, *relabel),
              PlacedTrafficCost(traffic, *topo, identity))
        << spec;
  }
}

}  // namespace
}  // namespace semmoe::planner
