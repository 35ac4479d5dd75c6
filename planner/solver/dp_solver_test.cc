#include "planner/solver/dp_solver.h"

#include <iostream>
#include <random>

#include "common/file.h"
#include "common/testing/shared_data.h"
#include "gtest/gtest.h"
#include "planner/eval/evaluate.h"
#include "planner/solver/scale.h"
#include "planner/trace/array_trace.h"

namespace semmoe::planner {
namespace {

using trace::TraceSet;

// Four planted clusters of requests; at each layer a cluster uses only its own 4 of 16 experts
// (a different random split per layer). A perfect co-schedule keeps every activation local.
TraceSet Planted(uint64_t seed) {
  std::mt19937 rng(seed);
  TraceSet t;
  t.header.num_experts = 16;
  t.header.top_k = 2;
  t.header.moe_layers = {0, 1};
  std::vector<std::vector<int>> perm(2, std::vector<int>(16));
  for (auto& p : perm) {
    for (int i = 0; i < 16; ++i) p[i] = i;
    for (int i = 15; i > 0; --i) std::swap(p[i], p[rng() % (i + 1)]);
  }
  for (int r = 0; r < 40; ++r) {
    const int cluster = r % 4;     // Ten requests per cluster: a perfect schedule is balanced.
    std::vector<uint32_t> tokens;  // Each cluster has its own vocabulary, as topics do.
    for (int i = 0; i < 10; ++i) tokens.push_back(cluster * 100 + rng() % 20);
    std::vector<uint16_t> experts;
    for (int i = 0; i < 10; ++i) {
      for (int l = 0; l < 2; ++l) {
        const int a = rng() % 4, b = (a + 1 + rng() % 3) % 4;
        experts.push_back(perm[l][cluster * 4 + a]);
        experts.push_back(perm[l][cluster * 4 + b]);
      }
    }
    EXPECT_TRUE(t.AddRequest("r" + std::to_string(r), tokens, experts).ok());
  }
  return t;
}

TEST(DpSolverTest, RecoversPlantedClusters) {
  TraceSet t = Planted(3);
  EXPECT_DOUBLE_EQ(DpRequestBound(t, 4), 1.0);
  // The co-schedule itself, and the placement re-fitted to the router's affinity rule.
  for (int router_rounds : {0, 6}) {
    auto sol = SolveDp(t, {.num_devices = 4, .seed = 1, .router_rounds = router_rounds});
    ASSERT_TRUE(sol.ok()) << sol.status();
    EXPECT_DOUBLE_EQ(sol->lar, 1.0) << router_rounds;
    EXPECT_DOUBLE_EQ(EvaluateDp(t, sol->placement, sol->request_device)->lar, 1.0);
  }
  auto sol = SolveDp(t, {.num_devices = 4, .token_balance_eps = 0.05, .seed = 1});
  ASSERT_TRUE(sol.ok()) << sol.status();
  // The reported LAR is what evaluation measures for the returned schedule.
  auto m = EvaluateDp(t, sol->placement, sol->request_device);
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ(m->lar, sol->lar);
  EXPECT_LE(m->token_load_imbalance, 1.05);
  auto vanilla = EvaluateDp(t, *Placement::Vanilla({0, 1}, 16, 4), RoundRobinRequests(t, 4));
  EXPECT_LT(vanilla->lar, 0.5);
}

TEST(DpSolverTest, DeterministicAndBalanced) {
  TraceSet t = Planted(5);
  auto a = SolveDp(t, {.num_devices = 2, .seed = 9}), b = SolveDp(t, {.num_devices = 2, .seed = 9});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->placement.ToJson(), b->placement.ToJson());
  EXPECT_EQ(a->request_device, b->request_device);
  EXPECT_LE(EvaluateDp(t, a->placement, a->request_device)->token_load_imbalance, 1.05);
}

// Like Planted, but cluster 0 has twice the requests and every token takes its cluster's first
// expert: co-placing clusters piles cluster 0's load on one device.
TraceSet Skewed(uint64_t seed) {
  std::mt19937 rng(seed);
  TraceSet t;
  t.header.num_experts = 16;
  t.header.top_k = 2;
  t.header.moe_layers = {0, 1};
  for (int r = 0; r < 50; ++r) {
    const int cluster = r < 20 ? 0 : 1 + r % 3;
    std::vector<uint32_t> tokens;
    std::vector<uint16_t> experts;
    for (int i = 0; i < 10; ++i) {
      tokens.push_back(cluster * 100 + rng() % 20);
      for (int l = 0; l < 2; ++l) {
        experts.push_back(cluster * 4);
        experts.push_back(cluster * 4 + 1 + rng() % 3);
      }
    }
    EXPECT_TRUE(t.AddRequest("r" + std::to_string(r), tokens, experts).ok());
  }
  return t;
}

TEST(DpSolverTest, OptionalExpertLoadBalance) {
  TraceSet t = Skewed(2);
  auto free = SolveDp(t, {.num_devices = 4, .seed = 1});
  auto balanced = SolveDp(t, {.num_devices = 4, .seed = 1, .expert_balance_eps = 0.25});
  ASSERT_TRUE(free.ok() && balanced.ok());
  auto m_free = EvaluateDp(t, free->placement, free->request_device);
  auto m_bal = EvaluateDp(t, balanced->placement, balanced->request_device);
  std::cout << "expert load imbalance " << m_free->expert_load_imbalance << " → "
            << m_bal->expert_load_imbalance << ", LAR " << m_free->lar << " → " << m_bal->lar
            << "\n";
  EXPECT_GT(m_free->expert_load_imbalance, 1.3);
  EXPECT_LE(m_bal->expert_load_imbalance, 1.25 + 1e-9);
  EXPECT_DOUBLE_EQ(m_bal->lar, balanced->lar);  // The reported LAR is the balanced one.
  EXPECT_GT(m_bal->lar, 0.5);                   // Still far above vanilla.
  EXPECT_LE(m_bal->token_load_imbalance, 1.05);
}

// Two clusters of requests, each using its own 8 of 16 experts at every layer: on 4 devices a
// cluster's experts need two of them, and on 2 × 2 those two should share a node.
TEST(DpSolverTest, TopologyCreditKeepsAClustersExpertsOnItsNode) {
  std::mt19937 rng(38);
  TraceSet t;
  t.header.num_experts = 16;
  t.header.top_k = 2;
  t.header.moe_layers = {0, 1};
  for (int r = 0; r < 40; ++r) {
    const int cluster = r % 2;
    std::vector<uint32_t> tokens;
    std::vector<uint16_t> experts;
    for (int i = 0; i < 10; ++i) {
      tokens.push_back(cluster * 100 + rng() % 20);
      for (int l = 0; l < 2; ++l) {
        const int a = rng() % 8, b = (a + 1 + rng() % 7) % 8;
        experts.push_back(cluster * 8 + a);
        experts.push_back(cluster * 8 + b);
      }
    }
    ASSERT_TRUE(t.AddRequest("r" + std::to_string(r), tokens, experts).ok());
  }
  auto topo = Topology::Parse("2x2");
  const std::vector<int64_t> credit = TopologyCredit(*topo, 0.5);
  EXPECT_EQ(credit[0], kCreditScale);                      // Own rank.
  EXPECT_EQ(credit[1], kCreditScale / 2);                  // Same node.
  EXPECT_EQ(credit[2], 0);                                 // Other node.
  auto solved = SolveDp(t, {.num_devices = 4, .router_rounds = 0, .credit = credit});
  ASSERT_TRUE(solved.ok()) << solved.status();
  auto m = EvaluateDp(t, solved->placement, solved->request_device, {.topology = &*topo});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(m->node_lar, 1.0);
  EXPECT_DOUBLE_EQ(solved->lar, m->lar);  // The reported LAR counts local activations only.
  EXPECT_GE(solved->lar, 0.45);
  EXPECT_FALSE(SolveDp(t, {.num_devices = 4, .credit = {1, 2, 3}}).ok());
}

TEST(DpSolverTest, Errors) {
  TraceSet t = Planted(1);
  EXPECT_FALSE(SolveDp(t, {.num_devices = 3}).ok());
  EXPECT_FALSE(SolveDp(TraceSet{}, {.num_devices = 4}).ok());
  // One request too long for any device at this epsilon.
  TraceSet skewed = t;
  std::vector<uint32_t> tokens(400);
  std::vector<uint16_t> experts(400 * 2 * 2, 1);
  ASSERT_TRUE(skewed.AddRequest("huge", tokens, experts).ok());
  auto s = SolveDp(skewed, {.num_devices = 4});
  EXPECT_NE(s.status().message().find("exceeds a device's token capacity"), std::string::npos);
}

// A trace of a model with many experts that uses few of them (a small profile): the assignment
// covers the used experts only, so it stays fast, and still finds the planted co-schedule; the
// unused experts fill the devices evenly. Over kMaxSolverExperts, a clear error.
TEST(DpSolverTest, ManyExpertsFewUsed) {
  const TraceSet planted = Planted(3);
  TraceSet t;
  t.header = planted.header;
  t.header.num_experts = kMaxSolverExperts;
  for (int r = 0; r < planted.num_requests(); ++r) {
    const int64_t b = planted.request_begin[r], e = planted.request_begin[r + 1];
    std::vector<uint16_t> experts;
    for (int64_t i = b * 4; i < e * 4; ++i) experts.push_back(planted.experts[i] * 32 + 7);
    ASSERT_TRUE(t.AddRequest(planted.request_names[r],
                             {planted.tokens.begin() + b, planted.tokens.begin() + e}, experts)
                    .ok());
  }
  auto sol = SolveDp(t, {.num_devices = 4, .seed = 1});
  ASSERT_TRUE(sol.ok()) << sol.status();
  EXPECT_DOUBLE_EQ(sol->lar, 1.0);
  for (int l = 0; l < 2; ++l) {
    std::vector<int> per_device(4, 0);
    for (int e = 0; e < 512; ++e) ++per_device[sol->placement.Device(l, e)];
    EXPECT_EQ(per_device, (std::vector<int>{128, 128, 128, 128}));
  }
  t.header.num_experts = 2 * kMaxSolverExperts;
  auto refused = SolveDp(t, {.num_devices = 4});
  EXPECT_NE(refused.status().message().find("at most 512"), std::string::npos) << refused.status();
}

TEST(DpSolverTest, OfflineScheduleRecoversPlantedClustersForTheirPlacement) {
  TraceSet t = Planted(3);
  auto sol = SolveDp(t, {.num_devices = 4, .seed = 1, .router_rounds = 0});
  ASSERT_TRUE(sol.ok()) << sol.status();
  // From a blind schedule, the data step alone finds every cluster's device.
  auto offline = OfflineScheduleLar(t, sol->placement, RoundRobinRequests(t, 4));
  ASSERT_TRUE(offline.ok()) << offline.status();
  EXPECT_DOUBLE_EQ(*offline, 1.0);
  // Never below its start, never above the per-request bound, on a placement it was not made for.
  auto vanilla = Placement::Vanilla({0, 1}, 16, 4);
  const std::vector<int> start = RoundRobinRequests(t, 4);
  auto from_vanilla = OfflineScheduleLar(t, *vanilla, start);
  ASSERT_TRUE(from_vanilla.ok());
  EXPECT_GE(*from_vanilla, EvaluateDp(t, *vanilla, start)->lar);
  EXPECT_LE(*from_vanilla, DpRequestBound(t, 4));
}

TEST(DpSolverTest, OfflineScheduleErrors) {
  TraceSet t = Planted(1);
  auto vanilla = Placement::Vanilla({0, 1}, 16, 4);
  EXPECT_FALSE(OfflineScheduleLar(t, *vanilla, {0, 1}).ok());  // One device per request.
  std::vector<int> bad = RoundRobinRequests(t, 4);
  bad[3] = 4;
  EXPECT_FALSE(OfflineScheduleLar(t, *vanilla, bad).ok());
  EXPECT_FALSE(  // Layers that do not match the trace's.
      OfflineScheduleLar(t, *Placement::Vanilla({0}, 16, 4), RoundRobinRequests(t, 4)).ok());
  std::vector<std::vector<std::vector<int32_t>>> replicas(2, {{4}, {0}, {0}, {0}});
  auto replicated = vanilla->WithReplicas(replicas);
  ASSERT_TRUE(replicated.ok()) << replicated.status();
  auto refused = OfflineScheduleLar(t, *replicated, RoundRobinRequests(t, 4));
  EXPECT_NE(refused.status().message().find("replicas"), std::string::npos);
}

// The shared trained model's reference trace (2,000 held-out prompts): in-sample co-schedule
// LAR at G = 8 against the per-request bound and the vanilla / random baselines.
TEST(DpSolverTest, SharedReferenceTrace) {
  SEMMOE_REQUIRE_SHARED_DIR(shared);
  auto t = trace::ImportArrayTrace(JoinPath(shared, "models/qwen3-moe-a/reference/trace"));
  ASSERT_TRUE(t.ok()) << t.status();
  auto sol = SolveDp(*t, {.num_devices = 8, .starts = 2, .seed = 1, .router_rounds = 0});
  ASSERT_TRUE(sol.ok()) << sol.status();
  const double bound = DpRequestBound(*t, 8);
  auto vanilla =
      EvaluateDp(*t, *Placement::Vanilla({0, 1, 2, 3}, 32, 8), RoundRobinRequests(*t, 8));
  auto random =
      EvaluateDp(*t, *Placement::Random({0, 1, 2, 3}, 32, 8, 1), RoundRobinRequests(*t, 8));
  auto m = EvaluateDp(*t, sol->placement, sol->request_device);
  std::cout << "G=8 DP: vanilla " << vanilla->lar << ", random " << random->lar << ", semantic "
            << sol->lar << " (token imbalance " << m->token_load_imbalance << ", expert imbalance "
            << m->expert_load_imbalance << "), bound " << bound << " → " << 100 * sol->lar / bound
            << "% of the bound, " << sol->rounds << " rounds\n";
  EXPECT_GT(sol->lar, 2 * vanilla->lar);
  EXPECT_LE(sol->lar, bound + 1e-12);
  EXPECT_LE(m->token_load_imbalance, 1.05);
}

}  // namespace
}  // namespace semmoe::planner
