#include "planner/affinity/prompt_score_table.h"

#include <cmath>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "planner/affinity/prompt_scores.h"
#include "planner/affinity/testing/real_scale.h"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/token_affinity_builder.h"

namespace semmoe::planner {
namespace {

const float kHalfStep = -std::log(kPromptScoreFloor) / 65535 / 2 * 1.01f;

// Two MoE layers, 4 experts, top-1: token 5 on experts 0 and 1 (device 0 of vanilla G = 2),
// token 6 on experts 3 and 2 (device 1).
TokenAffinity Small() {
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0, 1};
  EXPECT_TRUE(t.AddRequest("r", {5, 6, 5, 6}, {0, 1, 3, 2, 0, 1, 3, 2}).ok());
  return BuildTokenAffinity(t);
}

TEST(PromptScoreTableTest, TermsAreThePromptScoreTermsWithinHalfAStep) {
  const TokenAffinity a = Small();
  const Placement p = *Placement::Vanilla({0, 1}, 4, 2);
  auto t = PromptScoreTable::FromAffinity(a, p, 16);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->vocab(), 16u);
  EXPECT_EQ(t->ranks(), 2);
  const std::vector<float> exact = PromptLogTerms(a.DpScores(p, 16), 2);
  ASSERT_EQ(t->terms().size(), exact.size());
  for (size_t i = 0; i < exact.size(); ++i) EXPECT_NEAR(t->terms()[i], exact[i], kHalfStep) << i;
  EXPECT_FLOAT_EQ(t->terms()[5 * 2 + 0], 0.0f);  // Token 5: everything on device 0.
  EXPECT_NEAR(t->terms()[5 * 2 + 1], std::log(kPromptScoreFloor), kHalfStep);
}

TEST(PromptScoreTableTest, RoundTripIsExactAndSizeIsTwoBytesPerTerm) {
  auto t = PromptScoreTable::FromAffinity(Small(), *Placement::Vanilla({0, 1}, 4, 2), 16);
  ASSERT_TRUE(t.ok());
  const std::string bytes = t->Serialize();
  EXPECT_EQ(bytes.size(), PromptScoreTable::SerializedSize(16, 2));
  auto back = PromptScoreTable::Deserialize(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->terms(), t->terms());
  EXPECT_EQ(back->Serialize(), bytes);
  EXPECT_EQ(PromptScoreTable::SerializedSize(151936, 8), 20u + 2u * 151936 * 8);  // 2.43 MB.
}

TEST(PromptScoreTableTest, BadInputIsAClearError) {
  EXPECT_FALSE(PromptScoreTable::FromTerms({-1.0f, 0.5f}, 2).ok());   // A positive term.
  EXPECT_FALSE(PromptScoreTable::FromTerms({-1.0f, -9.0f}, 2).ok());  // Below the floor.
  EXPECT_FALSE(PromptScoreTable::FromTerms({-1.0f, NAN}, 2).ok());
  EXPECT_FALSE(PromptScoreTable::FromTerms({-1.0f, 0.0f, 0.0f}, 2).ok());  // Not rows.
  EXPECT_FALSE(PromptScoreTable::FromTerms({}, 2).ok());
  auto mismatch = PromptScoreTable::FromAffinity(Small(), *Placement::Vanilla({0, 1, 2}, 4, 2), 16);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("do not match"), std::string::npos);
  EXPECT_FALSE(PromptScoreTable::FromAffinity(Small(), *Placement::Vanilla({0, 1}, 4, 2), 0).ok());
  auto magic = PromptScoreTable::Deserialize(Small().Serialize());
  ASSERT_FALSE(magic.ok());
  EXPECT_NE(magic.status().message().find("bad magic"), std::string::npos);
}

TEST(PromptScoreTableTest, FuzzedBytesGiveAStatusNeverACrash) {
  auto t = PromptScoreTable::FromAffinity(Small(), *Placement::Vanilla({0, 1}, 4, 2), 64);
  ASSERT_TRUE(t.ok());
  const std::string bytes = t->Serialize();
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(PromptScoreTable::Deserialize(bytes.substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(PromptScoreTable::Deserialize(bytes + "x").ok());
  std::mt19937 rng(7);
  int header_rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string c = bytes;
    const size_t at = rng() % 20;  // The header; the payload is any 16-bit values.
    c[at] = static_cast<char>(rng());
    auto got = PromptScoreTable::Deserialize(c);
    if (!got.ok()) {
      ++header_rejected;
      EXPECT_FALSE(got.status().message().empty());
    } else {
      EXPECT_EQ(got->terms().size(), static_cast<size_t>(got->vocab()) * got->ranks());
    }
  }
  EXPECT_GT(header_rejected, 2000);
}

TEST(PromptScoreTableTest, RealScaleTableIsSmallAndKeepsTheSignal) {
  const testing::RealScaleVersion v = testing::MakeRealScaleVersion();
  auto affinity = TokenAffinity::Deserialize(v.affinity);
  ASSERT_TRUE(affinity.ok()) << affinity.status();
  auto t = PromptScoreTable::FromAffinity(*affinity, v.placement, 151936);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Serialize().size(), 2430996u);
  EXPECT_GT(v.affinity.size(), 4u << 20);  // The full tables are over gRPC's default limit.
  // A seen token's best rank is the device its rows prefer.
  for (size_t i = 0; i < v.seen.size(); i += 97) {
    const float* row = &t->terms()[static_cast<size_t>(v.seen[i]) * 8];
    EXPECT_EQ(std::max_element(row, row + 8) - row, v.PreferredDevice(i)) << v.seen[i];
  }
}

}  // namespace
}  // namespace semmoe::planner
