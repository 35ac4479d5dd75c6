#include "router/rebatch/rebatcher.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
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
  explicit Collector(int n) : ranks(n, -2) {}
  Rebatcher::OnPlaced At(int i) {
    return [this, i](int rank) {
      ranks[i] = rank;
      if (++done == static_cast<int>(ranks.size())) all.Notify();
    };
  }
  std::vector<int> ranks;
  std::atomic<int> done{0};
  absl::Notification all;
};

TEST(RebatcherTest, AWindowIsPlacedTogether) {
  // Six requests all prefer rank 0. Placed one by one into an idle cluster, each would get it;
  // in one window the capacity (60 / 2 + 10 = 40 tokens) lets the four most decisive have it.
  Rebatcher rebatcher(2, {.policy = Policy::kSemantic,
                          .balance_eps = 0.0,
                          .window = absl::Seconds(30),
                          .max_window_requests = 6});
  Collector c(6);
  const absl::Time far = absl::Now() + absl::Hours(1);
  const std::vector<double> second = {-1, -6, -2, -5, -3, -4};
  for (int i = 0; i < 6; ++i) rebatcher.Submit(Req(10, {0, second[i]}), far, c.At(i));
  ASSERT_TRUE(c.all.WaitForNotificationWithTimeout(absl::Seconds(10)));  // The 6th closed it.
  EXPECT_EQ(c.ranks, (std::vector<int>{1, 0, 1, 0, 0, 0}));
  const std::vector<RankCounters> ranks = rebatcher.Ranks();
  EXPECT_EQ(ranks[0].load.tokens_in_flight, 40);
  EXPECT_EQ(ranks[0].requests_in_flight, 4);
  EXPECT_EQ(ranks[1].assigned, 2);
  rebatcher.Finished(0, 10);
  EXPECT_EQ(rebatcher.Ranks()[0].load.tokens_in_flight, 30);
  EXPECT_EQ(rebatcher.Ranks()[0].requests_in_flight, 3);
}

TEST(RebatcherTest, NeverHoldsARequestPastItsBudget) {
  Rebatcher rebatcher(2, {.window = absl::Seconds(60)});
  Collector c(1);
  const absl::Time start = absl::Now();
  rebatcher.Submit(Req(10), start + absl::Milliseconds(20), c.At(0));
  ASSERT_TRUE(c.all.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));  // Not the 60 s window.
  EXPECT_GE(c.ranks[0], 0);
}

TEST(RebatcherTest, UnusableRanksGetNothingAndStoppingAnswersMinusOne) {
  Collector c(2);
  {
    Rebatcher rebatcher(2, {.policy = Policy::kRoundRobin, .window = absl::Milliseconds(1)});
    rebatcher.SetUsable(0, false);
    rebatcher.SetUsable(1, false);
    rebatcher.Submit(Req(1), absl::Now(), c.At(0));
    absl::SleepFor(absl::Milliseconds(50));
    // Still queued when the rebatcher stops.
    rebatcher.Submit(Req(1), absl::Now() + absl::Hours(1), c.At(1));
  }
  ASSERT_TRUE(c.all.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(c.ranks, (std::vector<int>{-1, -1}));
}

}  // namespace
}  // namespace semmoe::router
