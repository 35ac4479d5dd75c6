#include "planner/solver/paper_placement.h"

#include <random>
#include <string>

#include "gtest/gtest.h"
#include "planner/eval/evaluate.h"

namespace semmoe::planner {
namespace {

using trace::TraceSet;

// Two layers, 8 experts, top-2, 40 requests of two planted topics: topic A's tokens use experts
// {0, 5, 2, 7}, topic B's {1, 4, 3, 6}, at both layers (with 10% noise).
TraceSet Topics() {
  std::mt19937 rng(7);
  TraceSet t;
  t.header.num_experts = 8;
  t.header.top_k = 2;
  t.header.moe_layers = {0, 1};
  const int groups[2][4] = {{0, 5, 2, 7}, {1, 4, 3, 6}};
  for (int r = 0; r < 40; ++r) {
    const int* grp = groups[r % 2];
    std::vector<uint32_t> tokens;
    std::vector<uint16_t> experts;
    const int len = 10 + static_cast<int>(rng() % 20);
    for (int i = 0; i < len; ++i) {
      tokens.push_back(static_cast<uint32_t>(r % 2 * 100 + rng() % 50));
      for (int l = 0; l < 2; ++l) {
        const bool noise = rng() % 10 == 0;
        const int a = noise ? static_cast<int>(rng() % 8) : grp[rng() % 4];
        int b = grp[rng() % 4];
        while (b == a) b = static_cast<int>(rng() % 8);
        experts.push_back(static_cast<uint16_t>(a));
        experts.push_back(static_cast<uint16_t>(b));
      }
    }
    EXPECT_TRUE(t.AddRequest("r" + std::to_string(r), tokens, experts).ok());
  }
  return t;
}

TEST(PaperPlacementTest, FindsThePlantedTopicsAndBeatsVanilla) {
  const TraceSet t = Topics();
  auto paper = SolvePaper(t, {.num_devices = 2, .seed = 1});
  ASSERT_TRUE(paper.ok()) << paper.status();
  for (int l = 0; l < 2; ++l) {
    EXPECT_EQ(paper->placement.Device(l, 0), paper->placement.Device(l, 5)) << l;
    EXPECT_EQ(paper->placement.Device(l, 0), paper->placement.Device(l, 7)) << l;
    EXPECT_NE(paper->placement.Device(l, 0), paper->placement.Device(l, 1)) << l;
  }
  EXPECT_GT(paper->lar, 0.8);
  // Its own schedule's LAR, as the evaluator counts it.
  auto own = EvaluateDp(t, paper->placement, paper->request_device);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_NEAR(own->lar, paper->lar, 1e-9);
  auto vanilla = Placement::Vanilla({0, 1}, 8, 2);
  auto blind = EvaluateDp(t, *vanilla, paper->request_device);
  EXPECT_GT(own->lar, blind->lar + 0.2);
}

TEST(PaperPlacementTest, DeterministicForASeedAndBalancedTokens) {
  const TraceSet t = Topics();
  auto a = SolvePaper(t, {.num_devices = 2, .seed = 3});
  auto b = SolvePaper(t, {.num_devices = 2, .seed = 3});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->placement.ToJson(), b->placement.ToJson());
  EXPECT_EQ(a->request_device, b->request_device);
  auto m = EvaluateDp(t, a->placement, a->request_device);
  ASSERT_TRUE(m.ok());
  // Longest first into a (1 + 0.05) quota: at most one request over it.
  EXPECT_LT(m->token_load_imbalance, 1.05 + 30.0 * 2 / t.num_tokens());
}

TEST(PaperPlacementTest, Errors) {
  const TraceSet t = Topics();
  EXPECT_EQ(SolvePaper(t, {.num_devices = 3}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(SolvePaper(TraceSet(), {.num_devices = 2}).ok());
}

}  // namespace
}  // namespace semmoe::planner
