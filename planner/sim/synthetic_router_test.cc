#include "planner/sim/synthetic_router.h"

#include <algorithm>
#include <set>

#include "gtest/gtest.h"
#include "planner/sim/routing_stats.h"

namespace semmoe::planner::sim {
namespace {

// 80 requests of 20-39 tokens over 300 ids (repeats, so ids can be learned), 4 domains.
trace::TraceSet Source(std::vector<int>& domains) {
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0};
  domains.clear();
  for (int r = 0; r < 80; ++r) {
    std::vector<uint32_t> ids;
    std::vector<uint16_t> experts;
    for (int i = 0; i < 20 + r % 20; ++i) {
      ids.push_back((r * 37 + i * i) % 300);
      experts.push_back(i % 4);
    }
    EXPECT_TRUE(t.AddRequest("r" + std::to_string(r), ids, experts).ok());
    domains.push_back(r % 4);
  }
  return t;
}

const SyntheticShape kShape{.layers = 4, .experts = 32, .top_k = 4, .vocab = 300};

TEST(SyntheticRouterTest, KeepsTheRequestsAndGivesKDistinctExperts) {
  std::vector<int> domains;
  const trace::TraceSet source = Source(domains);
  auto t = GenerateRouting(source, domains, kShape, {}, 1);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_requests(), source.num_requests());
  EXPECT_EQ(t->request_begin, source.request_begin);
  EXPECT_EQ(t->tokens, source.tokens);
  EXPECT_EQ(t->num_layers(), 4);
  EXPECT_EQ(t->top_k(), 4);
  for (int64_t tok = 0; tok < t->num_tokens(); ++tok) {
    for (int l = 0; l < 4; ++l) {
      const uint16_t* e = t->Experts(tok, l);
      EXPECT_EQ(std::set<int>(e, e + 4).size(), 4u);
      for (int j = 0; j < 4; ++j) EXPECT_LT(e[j], 32);
    }
  }
  // The same seed, the same trace; a larger vocabulary spreads the ids.
  EXPECT_EQ(GenerateRouting(source, domains, kShape, {}, 1)->experts, t->experts);
  SyntheticShape wide = kShape;
  wide.vocab = 151936;
  auto spread = GenerateRouting(source, domains, wide, {}, 1);
  ASSERT_TRUE(spread.ok());
  EXPECT_GT(*std::max_element(spread->tokens.begin(), spread->tokens.end()), 300u);
}

TEST(SyntheticRouterTest, EachParameterMovesItsStatistic) {
  std::vector<int> domains;
  const trace::TraceSet source = Source(domains);
  auto stats = [&](SyntheticParams p) {
    return MeasureRouting(*GenerateRouting(source, domains, kShape, p, 3));
  };
  const SyntheticParams none{
      .popularity_skew = 0, .token_bias = 0, .domain_bias = 0, .layer_bias = 0};
  const RoutingStats flat = stats(none);
  EXPECT_NEAR(flat.token_lift, 0, 0.08);
  EXPECT_NEAR(flat.request_lift, 0, 0.08);
  EXPECT_NEAR(flat.layer_lift, 0, 0.08);
  SyntheticParams p = none;
  p.popularity_skew = 1.5;
  EXPECT_GT(stats(p).popularity_cv, flat.popularity_cv + 0.3);
  p = none;
  p.token_bias = 4;
  EXPECT_GT(stats(p).token_lift, flat.token_lift + 0.2);
  p = none;
  p.domain_bias = 3;
  EXPECT_GT(stats(p).request_lift, flat.request_lift + 0.1);
  p = none;
  p.layer_bias = 4;
  EXPECT_GT(stats(p).layer_lift, flat.layer_lift + 0.2);
}

TEST(SyntheticRouterTest, TheFitFindsStatisticsOfKnownParameters) {
  std::vector<int> domains;
  const trace::TraceSet source = Source(domains);
  const SyntheticParams truth{
      .popularity_skew = 0.8, .token_bias = 3, .domain_bias = 1.5, .layer_bias = 2};
  const RoutingStats want = MeasureRouting(*GenerateRouting(source, domains, kShape, truth, 5));
  auto fitted = FitSynthetic(source, domains, kShape, want, 5);
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  const RoutingStats got = MeasureRouting(*GenerateRouting(source, domains, kShape, *fitted, 5));
  EXPECT_NEAR(got.popularity_cv, want.popularity_cv, 0.05);
  EXPECT_NEAR(got.token_lift, want.token_lift, 0.05);
  EXPECT_NEAR(got.request_lift, want.request_lift, 0.05);
  EXPECT_NEAR(got.layer_lift, want.layer_lift, 0.05);
}

TEST(SyntheticRouterTest, ShapesOutOfRangeAreRefused) {
  std::vector<int> domains;
  const trace::TraceSet source = Source(domains);
  EXPECT_FALSE(
      GenerateRouting(source, domains, {.layers = 1, .experts = 4, .top_k = 5, .vocab = 9}, {}, 1)
          .ok());
  EXPECT_FALSE(
      GenerateRouting(source, domains, {.layers = 0, .experts = 4, .top_k = 1, .vocab = 9}, {}, 1)
          .ok());
  EXPECT_FALSE(GenerateRouting(source, {1, 2}, kShape, {}, 1).ok());
  EXPECT_FALSE(GenerateRouting(source, domains, kShape, {.token_bias = -1}, 1).ok());
  // Groups that do not divide the experts, or top groups too small to hold top-k.
  EXPECT_FALSE(GenerateRouting(source, domains, kShape, {.groups = 5, .top_groups = 2}, 1).ok());
  EXPECT_FALSE(GenerateRouting(source, domains, kShape, {.groups = 16, .top_groups = 1}, 1).ok());
  EXPECT_FALSE(GenerateRouting(source, domains, kShape, {.groups = 4, .top_groups = 0}, 1).ok());
}

TEST(SyntheticRouterTest, GroupLimitedRoutingKeepsATokensExpertsInItsTopGroups) {
  // 32 experts in 8 groups of 4, a token's 4 experts within 2 groups (DeepSeek-V3's rule at a
  // small shape); unlimited, top-4 falls in 3+ groups most of the time.
  std::vector<int> domains;
  const trace::TraceSet source = Source(domains);
  auto groups_touched = [&](const SyntheticParams& p) {
    auto t = GenerateRouting(source, domains, kShape, p, 7);
    EXPECT_TRUE(t.ok()) << t.status();
    int most = 0;
    double mean = 0;
    int64_t rows = 0;
    for (int64_t tok = 0; tok < t->num_tokens(); ++tok) {
      for (int l = 0; l < kShape.layers; ++l) {
        std::set<int> groups, experts;
        for (int j = 0; j < kShape.top_k; ++j) {
          const int e = t->experts[(tok * kShape.layers + l) * kShape.top_k + j];
          groups.insert(e / 4);
          experts.insert(e);
        }
        EXPECT_EQ(experts.size(), 4u);
        most = std::max(most, static_cast<int>(groups.size()));
        mean += groups.size(), ++rows;
      }
    }
    return std::make_pair(most, mean / rows);
  };
  const auto [limited_most, limited_mean] = groups_touched({.groups = 8, .top_groups = 2});
  EXPECT_LE(limited_most, 2);
  const auto [free_most, free_mean] = groups_touched({});
  EXPECT_GT(free_mean, 2.5);
  EXPECT_LT(limited_mean, free_mean);
}

}  // namespace
}  // namespace semmoe::planner::sim
