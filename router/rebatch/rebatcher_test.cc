#include "router/rebatch/rebatcher.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"

namespace semmoe::router {
namespace {

PendingRequest Req(int64_t tokens, std::vector<double> fit = {}) {
  PendingRequest p;
  p.load_tokens = tokens;
  p.fit = std::move(fit);
  return p;
}

// Waits until `n` callbacks have run; returns their ranks in submission order.
struct Collector {
  explicit Collector(int n) : ranks(n, -2), each(n) {}
  Rebatcher::OnPlaced At(int i) {
    return [this, i](int rank) {
      ranks[i] = rank;
      each[i].Notify();
      if (++done == static_cast<int>(ranks.size())) all.Notify();
    };
  }
  std::vector<int> ranks;
  std::vector<absl::Notification> each;
  std::atomic<int> done{0};
  absl::Notification all;
};

// How long a test waits for the rebatcher's thread to act on something that has happened (a
// generous bound on scheduling, never a measure of the window: time is the FakeClock's).
constexpr absl::Duration kActs = absl::Seconds(10);

TEST(RebatcherTest, AWindowIsPlacedTogether) {
  // Six requests all prefer rank 0. Placed one by one into an idle cluster, each would get it;
  // in one window the capacity (60 / 2 + 10 = 40 tokens) lets the four most decisive have it.
  FakeClock clock;
  Rebatcher rebatcher(2, {.policy = Policy::kSemantic,
                          .balance_eps = 0.0,
                          .window = absl::Seconds(30),
                          .max_window_requests = 6,
                          .clock = &clock});
  Collector c(6);
  const absl::Time far = clock.Now() + absl::Hours(1);
  const std::vector<double> second = {-1, -6, -2, -5, -3, -4};
  for (int i = 0; i < 6; ++i) rebatcher.Submit(Req(10, {0, second[i]}), far, c.At(i));
  ASSERT_TRUE(c.all.WaitForNotificationWithTimeout(kActs));  // The 6th closed it (no time passed).
  EXPECT_EQ(c.ranks, (std::vector<int>{1, 0, 1, 0, 0, 0}));
  const std::vector<RankCounters> ranks = rebatcher.Ranks();
  EXPECT_EQ(ranks[0].load.tokens_in_flight, 40);
  EXPECT_EQ(ranks[0].requests_in_flight, 4);
  EXPECT_EQ(ranks[1].assigned, 2);
  rebatcher.Finished(0, 10);
  EXPECT_EQ(rebatcher.Ranks()[0].load.tokens_in_flight, 30);
  EXPECT_EQ(rebatcher.Ranks()[0].requests_in_flight, 3);
}

TEST(RebatcherTest, PromptsCountAsQueuedPrefillUntilTheirFirstToken) {
  FakeClock clock;
  Rebatcher rebatcher(
      1, {.policy = Policy::kLeastLoaded, .window = absl::ZeroDuration(), .clock = &clock});
  Collector c(2);
  PendingRequest a = Req(110), b = Req(60);
  a.prompt_tokens = 100, b.prompt_tokens = 50;
  rebatcher.Submit(a, clock.Now() + absl::Hours(1), c.At(0));
  rebatcher.Submit(b, clock.Now() + absl::Hours(1), c.At(1));
  ASSERT_TRUE(c.all.WaitForNotificationWithTimeout(kActs));
  EXPECT_EQ(rebatcher.Ranks()[0].load.prefill_tokens, 150);
  rebatcher.Prefilled(0, 100);  // a's first token.
  EXPECT_EQ(rebatcher.Ranks()[0].load.prefill_tokens, 50);
  rebatcher.Finished(0, 110);  // a ends; its prompt was prefilled already.
  EXPECT_EQ(rebatcher.Ranks()[0].load.prefill_tokens, 50);
  rebatcher.Finished(0, 60, 50);  // b ends before its first token.
  EXPECT_EQ(rebatcher.Ranks()[0].load.prefill_tokens, 0);
  EXPECT_EQ(rebatcher.Ranks()[0].load.tokens_in_flight, 0);
}

TEST(RebatcherTest, TheWindowClosesOnTheClock) {
  FakeClock clock;
  Rebatcher rebatcher(2, {.window = absl::Milliseconds(2), .clock = &clock});
  Collector c(1);
  rebatcher.Submit(Req(10), clock.Now() + absl::Hours(1), c.At(0));
  // The clock has not moved: the window is still open, whatever the wall clock does.
  EXPECT_FALSE(c.all.WaitForNotificationWithTimeout(absl::Milliseconds(200)));
  EXPECT_EQ(rebatcher.Queued(), 1);
  clock.Advance(absl::Milliseconds(2));
  ASSERT_TRUE(c.all.WaitForNotificationWithTimeout(kActs));
  EXPECT_GE(c.ranks[0], 0);
}

TEST(RebatcherTest, NeverHoldsARequestPastItsBudget) {
  FakeClock clock;
  Rebatcher rebatcher(2, {.window = absl::Seconds(60), .clock = &clock});
  Collector c(2);
  rebatcher.Submit(Req(10), clock.Now() + absl::Hours(1), c.At(0));
  rebatcher.Submit(Req(10), clock.Now() + absl::Milliseconds(20), c.At(1));
  clock.Advance(absl::Milliseconds(19));
  EXPECT_FALSE(c.all.WaitForNotificationWithTimeout(absl::Milliseconds(200)));
  // The second request's budget ends the window for both, 59.98 s before the window would.
  clock.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(c.all.WaitForNotificationWithTimeout(kActs));
  EXPECT_GE(c.ranks[0], 0);
  EXPECT_GE(c.ranks[1], 0);
}

TEST(RebatcherTest, UnusableRanksGetNothingAndStoppingAnswersMinusOne) {
  Collector c(2);
  {
    FakeClock clock;
    Rebatcher rebatcher(
        2, {.policy = Policy::kRoundRobin, .window = absl::Milliseconds(1), .clock = &clock});
    rebatcher.SetUsable(0, false);
    rebatcher.SetUsable(1, false);
    rebatcher.Submit(Req(1), clock.Now(), c.At(0));  // Its budget is over: placed at once.
    ASSERT_TRUE(c.each[0].WaitForNotificationWithTimeout(kActs));
    // Still queued when the rebatcher stops (the clock never reaches its window's end).
    rebatcher.Submit(Req(1), clock.Now() + absl::Hours(1), c.At(1));
  }
  ASSERT_TRUE(c.all.WaitForNotificationWithTimeout(kActs));
  EXPECT_EQ(c.ranks, (std::vector<int>{-1, -1}));
}

}  // namespace
}  // namespace semmoe::router
