#include "router/tables/router_tables.h"

#include <algorithm>

#include <string>

#include "gtest/gtest.h"
#include "planner/affinity/prompt_score_table.h"
#include "planner/affinity/testing/real_scale.h"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/placement/placement.h"

namespace semmoe::router {
namespace {

// Two MoE layers, 4 experts, top-1: token 5 uses experts 0 and 1 (device 0 under vanilla G = 2),
// token 6 uses experts 3 and 2 (device 1).
std::string Affinity() {
  planner::trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0, 1};
  EXPECT_TRUE(t.AddRequest("r", {5, 6, 5, 6}, {0, 1, 3, 2, 0, 1, 3, 2}).ok());
  return planner::BuildTokenAffinity(t).Serialize();
}

std::string Vanilla(int g) { return planner::Placement::Vanilla({0, 1}, 4, g)->ToJson(); }

TEST(RouterTablesTest, PromptsFitTheRankHoldingTheirExperts) {
  auto tables = BuildRouterTables(7, Affinity(), Vanilla(2), 2, 16);
  ASSERT_TRUE(tables.ok()) << tables.status();
  EXPECT_EQ((*tables)->version, 7);
  const std::vector<int32_t> fives = {5, 5, 5}, sixes = {6, 6};
  std::vector<double> f = (*tables)->Fit(fives);
  EXPECT_GT(f[0], f[1]);
  f = (*tables)->Fit(sixes);
  EXPECT_GT(f[1], f[0]);
  // Out-of-vocabulary ids are ignored rather than read past the table.
  const std::vector<int32_t> odd = {-3, 99};
  EXPECT_EQ((*tables)->Fit(odd), (std::vector<double>{0, 0}));
}

TEST(RouterTablesTest, NodeFitAddsTheSharesOfANodesRanks) {
  // 4 experts on 4 ranks (vanilla: rank d holds expert d); token 5 chooses experts 0 and 1,
  // token 6 experts 3 and 2 (Affinity()'s two layers). Ranks {0, 1} as one node, {2, 3} the
  // other: token 5 fits node 0 wholly, token 6 node 1.
  auto tables = BuildRouterTables(7, Affinity(), Vanilla(4), 4, 16);
  ASSERT_TRUE(tables.ok()) << tables.status();
  const std::vector<int> node_of = {0, 0, 1, 1};
  const std::vector<int32_t> fives = {5, 5}, sixes = {6}, odd = {-1, 99};
  std::vector<double> f = (*tables)->NodeFit(fives, node_of);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_GT(f[0], f[1]);
  const std::vector<double> by_rank = (*tables)->Fit(fives);
  // A node's term is the log of its ranks' shares summed: at least its best rank's.
  EXPECT_GE(f[0], std::max(by_rank[0], by_rank[1]) - 1e-9);
  f = (*tables)->NodeFit(sixes, node_of);
  EXPECT_GT(f[1], f[0]);
  EXPECT_EQ((*tables)->NodeFit(odd, node_of), (std::vector<double>{0, 0}));
  EXPECT_TRUE((*tables)->NodeFit(fives, std::vector<int>{0, 1}).empty());  // Not one per rank.
}

TEST(RouterTablesTest, BadTablesAreClearErrors) {
  auto e = BuildRouterTables(1, "SMAFFIN1 garbage", Vanilla(2), 2, 16);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("affinity tables"), std::string::npos) << e.status();
  e = BuildRouterTables(1, Affinity(), "{not json", 2, 16);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("placement"), std::string::npos) << e.status();
  e = BuildRouterTables(1, Affinity(), Vanilla(4), 2, 16);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("for 4 devices"), std::string::npos) << e.status();
  e = BuildRouterTables(1, Affinity(), planner::Placement::Vanilla({0, 1, 2}, 4, 2)->ToJson(), 2,
                        16);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("do not match"), std::string::npos) << e.status();
}

TEST(RouterTablesTest, ThePlannersTableAndTheFilesGiveTheSameTerms) {
  auto from_files = BuildRouterTables(3, Affinity(), Vanilla(2), 2, 16);
  ASSERT_TRUE(from_files.ok());
  auto table =
      planner::PromptScoreTable::FromAffinity(*planner::TokenAffinity::Deserialize(Affinity()),
                                              *planner::Placement::Vanilla({0, 1}, 4, 2), 16);
  ASSERT_TRUE(table.ok());
  auto served = RouterTablesFromScores(3, table->Serialize(), 2, 16);
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_EQ((*served)->log_terms, (*from_files)->log_terms);
  EXPECT_EQ((*served)->version, 3);
  // A table for another router is refused, naming both shapes.
  auto other = RouterTablesFromScores(3, table->Serialize(), 2, 32);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("16 tokens × 2 ranks"), std::string::npos)
      << other.status();
  EXPECT_FALSE(RouterTablesFromScores(3, "SMPSCOR1", 2, 16).ok());
}

// Fixed files at a real model's scale: Qwen3's 151,936-token vocabulary, 48 layers × 128
// experts on G = 8; prompts of tokens that prefer a rank fit it best.
TEST(RouterTablesTest, RealScaleFilesLoad) {
  const planner::testing::RealScaleVersion v = planner::testing::MakeRealScaleVersion();
  auto tables = BuildRouterTables(9, v.affinity, v.placement.ToJson(), 8, 151936);
  ASSERT_TRUE(tables.ok()) << tables.status();
  EXPECT_EQ((*tables)->log_terms.size(), 151936u * 8);
  for (size_t i = 0; i < v.seen.size(); i += 131) {
    const std::vector<int32_t> prompt(5, static_cast<int32_t>(v.seen[i]));
    const std::vector<double> fit = (*tables)->Fit(prompt);
    EXPECT_EQ(std::max_element(fit.begin(), fit.end()) - fit.begin(), v.PreferredDevice(i));
  }
}

}  // namespace
}  // namespace semmoe::router
