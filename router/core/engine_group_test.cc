#include "router/core/engine_group.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/fake_clock.h"
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
  g.Received(3);
  g.Received(3);
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

// Admission's cost model: prompt tokens waiting for their first token over the rate the group
// gives them one, measured only while some wait.
TEST(EngineGroupTest, PredictsTheWaitFromPromptTokensAhead) {
  FakeClock clock;
  EngineGroup g(GroupOptions{.ranks = {"127.0.0.1:1"}, .clock = &clock});
  g.Poll();
  g.Received(400);
  EngineGroup::WaitPrediction p = g.PredictWait(100);
  EXPECT_EQ(p.queued_tokens, 500);
  EXPECT_EQ(p.wait, absl::ZeroDuration());  // No rate measured yet: no prediction.
  // 400 tokens given their first token per second for 3 s, 400 more arriving each second.
  for (int s = 0; s < 3; ++s) {
    clock.Advance(absl::Seconds(1));
    g.FirstToken(400);
    g.Received(400);
    g.Poll();
  }
  g.Received(1200);  // A burst: counted at once, not at the next poll.
  p = g.PredictWait(400);
  EXPECT_EQ(p.queued_tokens, 2000);
  EXPECT_NEAR(p.tokens_per_s, 400, 1);
  EXPECT_NEAR(absl::ToDoubleSeconds(p.wait), 5.0, 0.02);
  // Calls that end without a first token leave the queue; an idle group predicts nothing, and
  // idle time does not dilute the rate.
  g.Unstarted(1600);
  g.FirstToken(0);
  clock.Advance(absl::Seconds(60));
  g.Poll();
  g.Poll();
  p = g.PredictWait(10);
  EXPECT_EQ(p.queued_tokens, 10);
  EXPECT_EQ(p.wait, absl::ZeroDuration());
  EXPECT_NEAR(p.tokens_per_s, 400, 1);
}

// A group busy for half a second without giving any prompt its first token (a cold start under a
// burst, a stuck engine) predicts that nothing admitted now starts in time.
TEST(EngineGroupTest, ABusyGroupWithNoFirstTokenYetAdmitsNothingMore) {
  FakeClock clock;
  EngineGroup g(GroupOptions{.ranks = {"127.0.0.1:1"}, .clock = &clock});
  g.Received(100);
  for (int i = 0; i < 5; ++i) {  // 0.4 s measured: not enough yet.
    EXPECT_EQ(g.PredictWait(100).wait, absl::ZeroDuration()) << i;
    clock.Advance(absl::Milliseconds(100));
  }
  EXPECT_EQ(g.PredictWait(100).wait, absl::InfiniteDuration());
  g.FirstToken(100);  // Nothing waits: admitted at once.
  EXPECT_EQ(g.PredictWait(100).wait, absl::ZeroDuration());
}

}  // namespace
}  // namespace semmoe::router
