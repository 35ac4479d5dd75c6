#include "router/core/engine_group.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace semmoe::router {
namespace {

TEST(ChooseGroupTest, SplitsTrafficByShareDeterministically) {
  for (int share_b : {10, 30, 50}) {
    int b = 0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) b += ChooseGroup(absl::StrCat("req-", i), {100 - share_b, share_b});
    EXPECT_NEAR(100.0 * b / n, share_b, 2.0) << "share " << share_b;
  }
  // The same key always lands in the same group; a user keeps their arm.
  for (int i = 0; i < 100; ++i) {
    const std::string key = absl::StrCat("user-", i);
    EXPECT_EQ(ChooseGroup(key, {50, 50}), ChooseGroup(key, {50, 50}));
  }
  EXPECT_EQ(ChooseGroup("anything", {100}), 0);
  EXPECT_EQ(ChooseGroup("anything", {0, 100}), 1);
}

TEST(EngineGroupTest, CompletionsFeedLatencyAndGoodput) {
  EngineGroup g({.name = "B",
                 .share_percent = 30,
                 .ranks = {"127.0.0.1:1"},
                 .slo_ttft_ms = 100,
                 .slo_tpot_ms = 10});
  rpc::FinalRecord fast, slow;
  fast.set_completion_tokens(4);
  fast.set_ttft_ms(50);
  fast.set_tpot_ms(5);
  fast.set_e2e_ms(65);
  slow = fast;
  slow.set_ttft_ms(500);
  g.Received();
  g.Received();
  g.Completed(fast);
  g.Completed(slow);
  rpc::ArmStats s;
  g.Fill(s);
  EXPECT_EQ(s.name(), "B");
  EXPECT_EQ(s.share_percent(), 30);
  EXPECT_EQ(s.received(), 2);
  EXPECT_EQ(s.completed(), 2);
  EXPECT_EQ(s.completion_tokens(), 8);
  EXPECT_EQ(s.ttft_ms().count(), 2);
  EXPECT_DOUBLE_EQ(s.ttft_ms().p99(), 500);
  EXPECT_NEAR(s.goodput_rps() / s.throughput_rps(), 0.5, 1e-9);  // Only the fast one.
  ASSERT_EQ(s.ranks_size(), 1);
  EXPECT_EQ(s.ranks(0).arm(), "B");
  const nlohmann::json j = g.MetricsJson();
  EXPECT_EQ(j["completed"], 2);
  EXPECT_DOUBLE_EQ(j["ttft_ms"]["p50"].get<double>(), 50);
}

}  // namespace
}  // namespace semmoe::router
