#include "planner/affinity/token_affinity.h"

#include <random>

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

TEST(TokenAffinityTest, ProbabilitiesMarginalAndScores) {
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0, 1};
  // Token 5 → experts (0, 2) then (1, 2); token 6 → (3, 3).
  ASSERT_TRUE(t.AddRequest("r", {5, 5, 6}, {0, 2, 1, 2, 3, 3}).ok());
  TokenAffinity a = TokenAffinity::FromTrace(t);
  EXPECT_DOUBLE_EQ(a.Probability(0, 5, 0), 0.5);
  EXPECT_DOUBLE_EQ(a.Probability(1, 5, 2), 1.0);
  EXPECT_DOUBLE_EQ(a.Probability(0, 6, 3), 1.0);
  EXPECT_FALSE(a.Seen(9));
  EXPECT_NEAR(a.Probability(0, 9, 0), 1.0 / 3, 1e-6);  // Layer-0 marginal: experts 0, 1, 3.
  auto p = Placement::Vanilla({0, 1}, 4, 2);           // 0,1 → device 0; 2,3 → device 1.
  std::vector<float> s = a.DpScores(*p, 10);
  EXPECT_FLOAT_EQ(s[5 * 2 + 0], 1.0f);  // Layer 0 fully on device 0, layer 1 on device 1.
  EXPECT_FLOAT_EQ(s[5 * 2 + 1], 1.0f);
  EXPECT_FLOAT_EQ(s[6 * 2 + 1], 2.0f);
  EXPECT_NEAR(s[9 * 2 + 0] + s[9 * 2 + 1], 2.0f, 1e-6);  // Unseen: marginals, mass 1 per layer.
}

TEST(TokenAffinityTest, SerializeRoundTripAndCorruption) {
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0, 1};
  ASSERT_TRUE(t.AddRequest("r", {5, 5, 6}, {0, 2, 1, 2, 3, 3}).ok());
  const TokenAffinity a = TokenAffinity::FromTrace(t);
  const std::string bytes = a.Serialize();
  auto b = TokenAffinity::Deserialize(bytes);
  ASSERT_TRUE(b.ok()) << b.status();
  for (uint32_t token : {5u, 6u, 9u}) {
    for (int l = 0; l < 2; ++l) {
      for (int e = 0; e < 4; ++e) {
        EXPECT_FLOAT_EQ(b->Probability(l, token, e), a.Probability(l, token, e));
      }
    }
  }
  EXPECT_EQ(b->Serialize(), bytes);
  // Fuzz-style: truncations and byte flips give a Status, never a crash or a huge allocation.
  std::mt19937 rng(3);
  int rejected = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string c = bytes;
    if (rng() % 2) {
      c.resize(rng() % c.size());
    } else {
      c[rng() % c.size()] = static_cast<char>(rng());
    }
    rejected += !TokenAffinity::Deserialize(c).ok();
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_FALSE(TokenAffinity::Deserialize("nope").ok());
}

TEST(TokenAffinityTest, UnseenTokensBorrowTheirNearestSeenTokenInEmbeddingSpace) {
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0, 1};
  ASSERT_TRUE(t.AddRequest("r", {5, 5, 6}, {0, 2, 1, 2, 3, 3}).ok());
  TokenAffinity a = TokenAffinity::FromTrace(t);
  // 8 ids × 2 dims: id 7 points like 6, id 0 like 5; 5 and 6 are orthogonal.
  std::vector<float> embed(16, 0.0f);
  auto set = [&](int id, float x, float y) {
    embed[id * 2] = x;
    embed[id * 2 + 1] = y;
  };
  set(5, 1, 0);
  set(6, 0, 1);
  set(7, 0.1f, 3);
  set(0, 2, 0.2f);
  EXPECT_NEAR(a.Probability(0, 7, 3), 1.0 / 3, 1e-6);  // The layer-0 marginal, before.
  ASSERT_TRUE(a.AddEmbeddingFallback(embed, 2).ok());
  EXPECT_EQ(a.StandIn(7), 6);
  EXPECT_EQ(a.StandIn(0), 5);
  EXPECT_EQ(a.StandIn(5), 5);
  EXPECT_EQ(a.StandIn(100), -1);  // Outside the embeddings: marginal.
  for (int l = 0; l < 2; ++l) {
    for (int e = 0; e < 4; ++e) {
      EXPECT_EQ(a.Probability(l, 7, e), a.Probability(l, 6, e));
      EXPECT_EQ(a.Probability(l, 0, e), a.Probability(l, 5, e));
    }
  }
  // Kept by the compact form; a broken fallback section is an error.
  const std::string bytes = a.Serialize();
  auto back = TokenAffinity::Deserialize(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->StandIn(7), 6);
  EXPECT_EQ(back->Probability(1, 0, 2), a.Probability(1, 0, 2));
  EXPECT_FALSE(TokenAffinity::Deserialize(bytes.substr(0, bytes.size() - 3)).ok());
  std::string bad = bytes;
  bad[bad.size() - 4] = 9;  // The last stand-in becomes an unseen id.
  auto rejected = TokenAffinity::Deserialize(bad);
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.status().message().find("bad fallback"), std::string::npos);
  EXPECT_FALSE(a.AddEmbeddingFallback(std::vector<float>(5), 2).ok());        // Not rows.
  EXPECT_FALSE(a.AddEmbeddingFallback(std::vector<float>(8, 1.0f), 2).ok());  // Too few ids.
}

}  // namespace
}  // namespace semmoe::planner
