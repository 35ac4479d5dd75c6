#include "router/rebatch/assigner.h"

#include <vector>

#include "gtest/gtest.h"

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
  const auto bad = ParsePolicy("fastest");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'fastest'"), std::string::npos);
}

}  // namespace
}  // namespace semmoe::router
