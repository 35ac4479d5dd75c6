#include "router/rebatch/assigner.h"

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "planner/sim/cluster_profile.h"
#include "planner/sim/model_shape.h"

namespace semmoe::router {
namespace {

PendingRequest Req(int64_t tokens, std::vector<double> fit = {}) {
  PendingRequest p;
  p.load_tokens = tokens;
  p.fit = std::move(fit);
  return p;
}

TEST(AssignerTest, SemanticSendsRequestsWhereTheirPromptsFit) {
  Assigner a(Policy::kSemantic, 0.05);
  std::vector<RankLoad> loads(3);
  const std::vector<int> got =
      a.Assign({Req(10, {0, -5, -5}), Req(10, {-5, 0, -5}), Req(10, {-5, -5, 0})}, loads);
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(loads[0].tokens_in_flight, 10);
}

TEST(AssignerTest, WithNodesTheBestNodeFirstThenItsBestRankWithRoom) {
  // 4 ranks on 2 nodes (0, 1 | 2, 3). The best rank overall is 3, but node 0 fits better as a
  // whole: the request goes to node 0's best rank, 1.
  Assigner a(Policy::kSemantic, 0.05, {0, 0, 1, 1});
  std::vector<RankLoad> loads(4);
  PendingRequest p = Req(10, {-2, -1, -9, 0});
  p.node_fit = {-0.5, -3};
  EXPECT_EQ(a.Assign({p}, loads), (std::vector<int>{1}));
  // Rank 1 full (no KV room): node 0's other rank; both full: the next node's best rank.
  loads.assign(4, RankLoad{});
  loads[1].kv_free_tokens = 0;
  EXPECT_EQ(a.Assign({p}, loads), (std::vector<int>{0}));
  loads.assign(4, RankLoad{});
  loads[0].kv_free_tokens = loads[1].kv_free_tokens = 0;
  EXPECT_EQ(a.Assign({p}, loads), (std::vector<int>{3}));
  // Equal fit within the node: the less loaded rank.
  loads.assign(4, RankLoad{});
  loads[0].tokens_in_flight = 5;
  PendingRequest tie = Req(10, {-1, -1, -9, -9});
  tie.node_fit = {0, -5};
  EXPECT_EQ(a.Assign({tie}, loads), (std::vector<int>{1}));
  // Without node fits (no tables): by rank, as without nodes.
  loads.assign(4, RankLoad{});
  EXPECT_EQ(a.Assign({Req(10, {-2, -1, -9, 0})}, loads), (std::vector<int>{3}));
}

TEST(AssignerTest, SemanticRespectsTheBalanceAndSpillsToTheNextBest) {
  // Four requests of 10 tokens all prefer rank 0, then rank 2. Capacity 40 / 3 + 10 = 23.3: two
  // per rank. The two most decisive (by best minus second best) keep rank 0; the others spill to
  // their second choice, not to the empty rank 1.
  Assigner a(Policy::kSemantic, 0.0);
  std::vector<RankLoad> loads(3);
  const std::vector<int> got = a.Assign(
      {Req(10, {0, -9, -1}), Req(10, {0, -9, -8}), Req(10, {0, -9, -2}), Req(10, {0, -9, -3})},
      loads);
  EXPECT_EQ(got, (std::vector<int>{2, 0, 2, 0}));
  EXPECT_EQ(loads[0].tokens_in_flight, 20);
  EXPECT_EQ(loads[1].tokens_in_flight, 0);
  EXPECT_EQ(loads[2].tokens_in_flight, 20);
}

TEST(AssignerTest, SemanticCountsLoadAlreadyInFlight) {
  Assigner a(Policy::kSemantic, 0.0);
  std::vector<RankLoad> loads(2);
  loads[0].tokens_in_flight = 100;
  // Prefers rank 0, but rank 0 already holds more than the mean (55) plus one request.
  EXPECT_EQ(a.Assign({Req(10, {0, -3})}, loads), (std::vector<int>{1}));
}

TEST(AssignerTest, AnIdleClusterSendsALoneRequestWhereItFits) {
  Assigner a(Policy::kSemantic, 0.05);
  std::vector<RankLoad> loads(4);
  EXPECT_EQ(a.Assign({Req(50, {-9, -9, 0, -9})}, loads), (std::vector<int>{2}));
}

TEST(AssignerTest, WithoutScoresFallsBackToLeastLoaded) {
  Assigner a(Policy::kSemantic, 0.05);
  std::vector<RankLoad> loads(3);
  loads[0].tokens_in_flight = 5;
  loads[1].tokens_in_flight = 1;
  loads[2].tokens_in_flight = 3;
  EXPECT_EQ(a.Assign({Req(4)}, loads), (std::vector<int>{1}));
}

TEST(AssignerTest, SkipsUnusableExcludedAndFullRanks) {
  for (Policy policy : {Policy::kSemantic, Policy::kRoundRobin, Policy::kLeastLoaded}) {
    Assigner a(policy, 0.5);
    std::vector<RankLoad> loads(3);
    loads[0].usable = false;
    PendingRequest p = Req(10, {5, 1, 0});
    p.exclude = {1};
    EXPECT_EQ(a.Assign({p}, loads), (std::vector<int>{2})) << PolicyName(policy);
    loads[2].usable = false;
    EXPECT_EQ(a.Assign({p}, loads), (std::vector<int>{-1})) << PolicyName(policy);
  }
  // Semantic skips a rank whose KV cache cannot hold the request.
  Assigner a(Policy::kSemantic, 10.0);
  std::vector<RankLoad> loads(2);
  loads[0].kv_free_tokens = 5;
  EXPECT_EQ(a.Assign({Req(10, {0, -4})}, loads), (std::vector<int>{1}));
}

TEST(AssignerTest, RoundRobinAndLeastLoaded) {
  Assigner rr(Policy::kRoundRobin, 0.05);
  std::vector<RankLoad> loads(3);
  EXPECT_EQ(rr.Assign({Req(1), Req(1), Req(1), Req(1)}, loads), (std::vector<int>{0, 1, 2, 0}));
  EXPECT_EQ(rr.Assign({Req(1)}, loads), (std::vector<int>{1}));
  Assigner ll(Policy::kLeastLoaded, 0.05);
  std::vector<RankLoad> l2(2);
  EXPECT_EQ(ll.Assign({Req(10), Req(3), Req(3), Req(3)}, l2), (std::vector<int>{0, 1, 1, 1}));
}

TEST(AssignerTest, ParsesPolicies) {
  EXPECT_EQ(*ParsePolicy("semantic"), Policy::kSemantic);
  EXPECT_EQ(*ParsePolicy("round_robin"), Policy::kRoundRobin);
  EXPECT_EQ(*ParsePolicy("least_loaded"), Policy::kLeastLoaded);
  EXPECT_EQ(*ParsePolicy("time"), Policy::kTime);
  EXPECT_STREQ(PolicyName(Policy::kTime), "time");
  const auto bad = ParsePolicy("fastest");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'fastest'"), std::string::npos);
}

std::shared_ptr<const planner::sim::StepPredictor> Predictor(const std::string& profile,
                                                             planner::Topology topo,
                                                             bool node_dedup) {
  return std::make_shared<planner::sim::StepPredictor>(
      *planner::sim::KnownShape("deepseek-v3"), *planner::sim::LoadClusterProfile(profile),
      std::move(topo), planner::sim::PredictorOptions{.node_dedup = node_dedup});
}

PendingRequest Shared(int64_t prompt, std::vector<double> share) {
  PendingRequest p;
  p.prompt_tokens = prompt;
  p.load_tokens = prompt + 128;
  p.share = std::move(share);
  return p;
}

TEST(AssignerTest, TimeBuysLocalityWhereTheLinkBetweenNodesDecides) {
  // The lab's profile (hosts sharing one slow link), 2 nodes of 2: a prompt whose experts are on
  // node 1 goes there, and within node 1 to the less loaded rank.
  Assigner a(Policy::kTime, 0.05, {0, 0, 1, 1},
             Predictor("lab", *planner::Topology::Nodes(2, 2), true));
  std::vector<RankLoad> loads(4);
  loads[2] = {.tokens_in_flight = 900, .sequences = 3};
  EXPECT_EQ(a.Assign({Shared(400, {0, 0, 0.5, 0.5})}, loads), (std::vector<int>{3}));
  EXPECT_STREQ(a.last_time_choice().rule, "time");
  EXPECT_LT(a.last_time_choice().time_s, a.last_time_choice().least_loaded_s);
  EXPECT_EQ(loads[3].tokens_in_flight, 528);
  EXPECT_EQ(loads[3].sequences, 1);
}

TEST(AssignerTest, TimeIsLeastLoadedWithoutShares) {
  // No tables (no shares): nothing but balance to gain, and least_loaded's placement is kept.
  Assigner a(Policy::kTime, 0.05, {}, Predictor("h200", *planner::Topology::Flat(4), false));
  std::vector<RankLoad> loads(4);
  loads[0] = {.tokens_in_flight = 5000, .sequences = 20};
  loads[1] = {.tokens_in_flight = 100, .sequences = 1};
  loads[2] = {.tokens_in_flight = 3000, .sequences = 10};
  loads[3] = {.tokens_in_flight = 4000, .sequences = 15};
  EXPECT_EQ(a.Assign({Shared(200, {})}, loads), (std::vector<int>{1}));
  EXPECT_STREQ(a.last_time_choice().rule, "least_loaded");
}

TEST(AssignerTest, TimeKeepsOffUnusableRanksAndRanksWithoutKvRoom) {
  Assigner a(Policy::kTime, 0.05, {}, Predictor("lab", *planner::Topology::Flat(3), false));
  std::vector<RankLoad> loads(3);
  loads[0].usable = false;
  loads[1].kv_free_tokens = 10;
  EXPECT_EQ(a.Assign({Shared(400, {1, 0, 0})}, loads), (std::vector<int>{2}));
}

// The property the issue asks of the rule: on any window, profile, topology and placement
// (shares), the placement kept is predicted no slower than least_loaded's or round_robin's on
// the same window, and it is the placement that was predicted.
TEST(AssignerTest, TimeNeverPredictsWorseThanTheVanillaRules) {
  std::mt19937_64 rng(58);
  const std::vector<std::string> profiles = {"h200", "h100", "lab"};
  const std::vector<std::pair<int, int>> shapes = {{1, 2}, {1, 8}, {2, 4}, {4, 8}, {2, 2}, {8, 8}};
  int time_kept = 0, windows = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const auto [nodes, per_node] = shapes[rng() % shapes.size()];
    const int g = nodes * per_node;
    const bool dedup = nodes > 1 && rng() % 2 == 0;
    std::vector<int> node_of;
    for (int r = 0; r < g; ++r) node_of.push_back(r / per_node);
    auto predictor = Predictor(profiles[rng() % profiles.size()],
                               *planner::Topology::Nodes(nodes, per_node), dedup);
    Assigner a(Policy::kTime, 0.05, node_of, predictor);
    std::vector<RankLoad> loads(g);
    for (RankLoad& l : loads) {
      l.sequences = static_cast<int64_t>(rng() % 65);
      l.tokens_in_flight = l.sequences * static_cast<int64_t>(rng() % 3000);
      l.usable = rng() % 10 != 0;
    }
    std::vector<PendingRequest> window(1 + rng() % 6);
    std::gamma_distribution<double> skew(rng() % 2 ? 0.2 : 2.0);  // Peaked or flat shares.
    for (PendingRequest& p : window) {
      std::vector<double> share;
      if (rng() % 4 != 0) {
        double total = 0;
        for (int r = 0; r < g; ++r) total += share.emplace_back(skew(rng) + 1e-9);
        for (double& x : share) x /= total;
      }
      p = Shared(1 + static_cast<int64_t>(rng() % 4000), share);
    }
    std::vector<RankLoad> before = loads;
    const std::vector<int> got = a.Assign(window, loads);
    const TimeChoice& c = a.last_time_choice();
    // What was kept is what was predicted: re-predict the returned placement.
    std::vector<planner::sim::RankState> states;
    for (const RankLoad& l : before) {
      states.push_back({.sequences = l.sequences, .context_tokens = l.tokens_in_flight});
    }
    std::vector<planner::sim::NewRequest> requests;
    for (const PendingRequest& p : window) requests.push_back({p.prompt_tokens, p.share});
    const double kept = predictor->LayerTime(states, requests, got);
    EXPECT_LE(kept, c.least_loaded_s * (1 + 1e-12)) << trial;
    EXPECT_LE(kept, c.round_robin_s * (1 + 1e-12)) << trial;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] >= 0) {
        EXPECT_TRUE(before[got[i]].usable) << trial;
      }
    }
    time_kept += std::string(c.rule) == "time";
    ++windows;
  }
  // The rule is not least_loaded in disguise: on these windows it often finds a faster one.
  EXPECT_GT(time_kept, windows / 10);
}

}  // namespace
}  // namespace semmoe::router
