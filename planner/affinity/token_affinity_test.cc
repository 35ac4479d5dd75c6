#include "planner/affinity/token_affinity.h"

#include <random>
#include <string>

#include "gtest/gtest.h"
#include "planner/affinity/token_affinity_builder.h"

namespace semmoe::planner {
namespace {

// Two MoE layers, 4 experts, top-1. Token 5 → experts (0, 2) then (1, 2); token 6 → (3, 3).
trace::TraceSet TwoTokens() {
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0, 1};
  EXPECT_TRUE(t.AddRequest("r", {5, 5, 6}, {0, 2, 1, 2, 3, 3}).ok());
  return t;
}

TEST(TokenAffinityTest, ProbabilitiesMarginalAndScores) {
  const trace::TraceSet t = TwoTokens();
  TokenAffinity a = BuildTokenAffinity(t);
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
  const trace::TraceSet t = TwoTokens();
  const TokenAffinity a = BuildTokenAffinity(t);
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
  const trace::TraceSet t = TwoTokens();
  TokenAffinity a = BuildTokenAffinity(t);
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

TEST(TokenAffinityTest, ThePreviousTokenRefinesTheShares) {
  // Token 7 goes to expert 0 after token 1 and to expert 3 after token 2 (each twice), so alone
  // it is split; with its predecessor it is not.
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(t.AddRequest("a" + std::to_string(i), {1, 7}, {1, 0}).ok());
    ASSERT_TRUE(t.AddRequest("b" + std::to_string(i), {2, 7}, {1, 3}).ok());
  }
  ASSERT_TRUE(t.AddRequest("c", {9, 7}, {1, 3}).ok());  // Seen once: no context.
  const TokenAffinity a = BuildTokenAffinity(t);
  EXPECT_EQ(a.num_contexts(), 2);
  const Placement p = *Placement::Vanilla({0}, 4, 2);  // 0,1 → 0; 2,3 → 1.
  float alone[2], after1[2], after2[2], after9[2];
  a.ContextShares(0, 0xffffffffu, 7, p, alone);
  a.ContextShares(0, 1, 7, p, after1);
  a.ContextShares(0, 2, 7, p, after2);
  a.ContextShares(0, 9, 7, p, after9);
  EXPECT_FLOAT_EQ(alone[0], 0.4f);   // 2 of 5 occurrences on device 0.
  EXPECT_FLOAT_EQ(after9[0], 0.4f);  // An unsupported pair: the token alone.
  // (1 · 0.4 + 2 · 1) / 3 and (1 · 0.4 + 2 · 0) / 3.
  EXPECT_FLOAT_EQ(after1[0], 0.8f);
  EXPECT_NEAR(after2[0], 0.4f / 3, 1e-6);
  EXPECT_NEAR(after2[0] + after2[1], 1.0f, 1e-6);
  // Kept by the compact form; a broken context section is an error.
  const std::string bytes = a.Serialize();
  auto back = TokenAffinity::Deserialize(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  float again[2];
  back->ContextShares(0, 1, 7, p, again);
  EXPECT_FLOAT_EQ(again[0], after1[0]);
  std::string bad = bytes;
  bad[bad.size() - 1] = static_cast<char>(0x7f);  // The last probability becomes huge.
  EXPECT_FALSE(TokenAffinity::Deserialize(bad).ok());
  EXPECT_FALSE(TokenAffinity::Deserialize(bytes.substr(0, bytes.size() - 2)).ok());
}

}  // namespace
}  // namespace semmoe::planner
