#include "engine/parallel/node_dispatch.h"

#include <map>
#include <random>
#include <tuple>

#include "gtest/gtest.h"
#include "planner/placement/placement.h"
#include "planner/placement/topology.h"

namespace semmoe::engine {
namespace {

using planner::Placement;
using planner::Topology;

// Every rank's routing at one layer: [tokens × k] ids and weights.
struct Routing {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

Routing Random(std::mt19937& rng, int tokens, int k, int experts) {
  Routing r;
  for (int t = 0; t < tokens; ++t) {
    std::vector<int32_t> chosen;
    while (static_cast<int>(chosen.size()) < k) {
      const int e = rng() % experts;
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
    }
    for (int e : chosen) {
      r.ids.push_back(e);
      r.weights.push_back(static_cast<float>(rng() % 1000) / 1000);
    }
  }
  return r;
}

TEST(NodeDispatchTest, ATokenCrossesOncePerRemoteNodeWithItsSlots) {
  // 8 experts on 4 ranks (vanilla: rank d holds 2d, 2d + 1) as 2 nodes × 2 ranks; rank 0's token
  // uses experts 0 (own), 2 (rank 1), 4 (rank 2) and 6 (rank 3).
  auto topo = Topology::Parse("2x2");
  auto p = Placement::Vanilla({0}, 8, 4);
  const std::vector<int32_t> ids = {0, 2, 4, 6};
  const std::vector<float> weights = {0.1f, 0.2f, 0.3f, 0.4f};
  const DispatchPlan plan = PlanDispatch(*p, 0, 0, 4, ids, weights);
  const NodeDispatch nd = PlanNodeDispatch(plan, *topo, 0);
  EXPECT_EQ(nd.cross_rows, (std::vector<int64_t>{0, 0, 1, 0}));  // One row, to gateway 2.
  EXPECT_EQ(nd.cross_ids, (std::vector<int32_t>{8, 8, 4, 6}));
  EXPECT_EQ(nd.cross_dest, (std::vector<int32_t>{-1, -1, 2, 3}));
  EXPECT_EQ(nd.cross_weights, weights);
  EXPECT_EQ(nd.direct_rows, (std::vector<int64_t>{1, 1, 0, 0}));  // Itself and rank 1.
  EXPECT_EQ(nd.node_rows, (std::vector<int64_t>{0, 1}));
  // At gateway 2: one row for itself (expert 4), one for rank 3 (expert 6).
  auto fan = PlanFanOut(nd.cross_ids, nd.cross_dest, nd.cross_weights, 4, 8, *topo, 2);
  ASSERT_TRUE(fan.ok()) << fan.status();
  EXPECT_EQ(fan->rows, (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(fan->ids, (std::vector<int32_t>{8, 8, 4, 8, 8, 8, 8, 6}));
  // A row naming a rank of another node is refused (at rank 0, node 0).
  auto bad = PlanFanOut(nd.cross_ids, nd.cross_dest, nd.cross_weights, 4, 8, *topo, 0);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInternal);
}

// Every rank's plans and sizes, simulated end to end: the counts each side computes agree, and
// every (rank, token, slot) served elsewhere than its own rank reaches exactly the rank that
// serves it, through at most one crossing between nodes.
TEST(NodeDispatchTest, AllRanksSimulatedServeEverySlotOnceAndAgreeOnSizes) {
  std::mt19937 rng(38);
  for (const char* spec : {"2x2", "2x4", "4x2", "2x3"}) {
    auto topo = Topology::Parse(spec);
    const int g = topo->num_ranks(), k = 4, experts = 4 * g;
    auto placement = Placement::Random({0}, experts, g, rng());
    std::vector<Routing> routing;
    std::vector<DispatchPlan> plans;
    std::vector<NodeDispatch> nds;
    std::vector<std::vector<int64_t>> rank_rows, node_rows;
    for (int r = 0; r < g; ++r) {
      routing.push_back(Random(rng, 5 + rng() % 20, k, experts));
      plans.push_back(PlanDispatch(*placement, 0, r, k, routing[r].ids, routing[r].weights));
      nds.push_back(PlanNodeDispatch(plans[r], *topo, r));
      rank_rows.push_back(plans[r].send_rows);
      node_rows.push_back(nds[r].node_rows);
      std::vector<int32_t> served_by;
      for (int32_t e : routing[r].ids) served_by.push_back(placement->Serving(0, e, r));
      EXPECT_EQ(NodeRows(served_by, k, *topo, r), nds[r].node_rows) << spec;
    }
    std::vector<NodeExchangeSizes> sizes;
    for (int r = 0; r < g; ++r) {
      auto s = SizeNodeExchange(rank_rows, node_rows, *topo, r);
      ASSERT_TRUE(s.ok()) << s.status();
      sizes.push_back(*s);
      EXPECT_EQ(s->cross_send, nds[r].cross_rows) << spec << " rank " << r;
    }
    // (origin, token, slot) → served count.
    std::map<std::tuple<int, int, int>, int> served;
    for (int a = 0; a < g; ++a) {
      for (int b = 0; b < g; ++b) {
        EXPECT_EQ(sizes[a].cross_send[b], sizes[b].cross_recv[a]) << spec;
        EXPECT_EQ(sizes[a].local_send[b], sizes[b].local_recv[a]) << spec;
        EXPECT_EQ(topo->SameNode(a, b) ? sizes[a].cross_send[b] : sizes[a].local_send[b], 0)
            << spec << ": rows " << a << " → " << b << " in the other stage";
      }
      // Own tokens to ranks of its node.
      int64_t row = 0;
      for (int d = 0; d < g; ++d) {
        for (int64_t i = 0; i < nds[a].direct_rows[d]; ++i, ++row) {
          for (int j = 0; j < k; ++j) {
            if (nds[a].direct_ids[row * k + j] == experts) continue;
            EXPECT_TRUE(placement->Holds(0, d, nds[a].direct_ids[row * k + j]));
            ++served[{a, nds[a].direct_index[row], j}];
          }
        }
      }
    }
    // Stage 1 delivered: each gateway receives its origins' rows in rank order, fans them out.
    for (int gw = 0; gw < g; ++gw) {
      std::vector<int32_t> ids, dest, origin, token, slot_base;
      std::vector<float> weights;
      for (int o = 0; o < g; ++o) {
        int64_t at = 0;
        for (int r = 0; r < gw; ++r) at += nds[o].cross_rows[r];
        ASSERT_EQ(nds[o].cross_rows[gw], sizes[gw].cross_recv[o]);
        for (int64_t i = at; i < at + nds[o].cross_rows[gw]; ++i) {
          ids.insert(ids.end(), nds[o].cross_ids.begin() + i * k, nds[o].cross_ids.begin() + (i + 1) * k);
          dest.insert(dest.end(), nds[o].cross_dest.begin() + i * k, nds[o].cross_dest.begin() + (i + 1) * k);
          weights.insert(weights.end(), nds[o].cross_weights.begin() + i * k,
                         nds[o].cross_weights.begin() + (i + 1) * k);
          origin.push_back(o);
          token.push_back(nds[o].cross_index[i]);
        }
      }
      auto fan = PlanFanOut(ids, dest, weights, k, experts, *topo, gw);
      ASSERT_TRUE(fan.ok()) << fan.status();
      EXPECT_EQ(fan->rows, sizes[gw].forwarded_send) << spec << " gateway " << gw;
      int64_t row = 0;
      for (int d = 0; d < g; ++d) {
        for (int64_t i = 0; i < fan->rows[d]; ++i, ++row) {
          const int32_t r = fan->index[row];
          for (int j = 0; j < k; ++j) {
            const int32_t e = fan->ids[row * k + j];
            if (e == experts) continue;
            EXPECT_TRUE(placement->Holds(0, d, e));
            EXPECT_EQ(routing[origin[r]].ids[token[r] * k + j], e);
            EXPECT_EQ(fan->weights[row * k + j], routing[origin[r]].weights[token[r] * k + j]);
            ++served[{origin[r], token[r], j}];
          }
        }
      }
    }
    // Every slot of every token served exactly once (own-rank slots: by the direct self rows).
    for (int a = 0; a < g; ++a) {
      const int tokens = static_cast<int>(routing[a].ids.size()) / k;
      for (int t = 0; t < tokens; ++t) {
        for (int j = 0; j < k; ++j) {
          EXPECT_EQ((served[{a, t, j}]), 1) << spec << " rank " << a << " token " << t << " slot " << j;
        }
      }
    }
  }
}

TEST(NodeDispatchTest, BadCountsAreRefused) {
  auto topo = Topology::Parse("2x2");
  std::vector<std::vector<int64_t>> rank_rows(4, std::vector<int64_t>(4, 1)),
      node_rows(4, std::vector<int64_t>(2, 1));
  EXPECT_TRUE(SizeNodeExchange(rank_rows, node_rows, *topo, 0).ok());
  rank_rows[1][2] = -1;
  EXPECT_FALSE(SizeNodeExchange(rank_rows, node_rows, *topo, 0).ok());
  rank_rows[1][2] = 1;
  node_rows[3].pop_back();
  EXPECT_FALSE(SizeNodeExchange(rank_rows, node_rows, *topo, 0).ok());
  EXPECT_FALSE(SizeNodeExchange({}, {}, *topo, 0).ok());
}

}  // namespace
}  // namespace semmoe::engine
