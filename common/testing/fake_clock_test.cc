#include "common/testing/fake_clock.h"

#include <atomic>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace semmoe {
namespace {

TEST(FakeClockTest, StartsWhereToldAndAdvancesOnlyForward) {
  FakeClock clock(absl::FromUnixSeconds(100));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(100));
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(105));
  clock.Advance(absl::Seconds(-50));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(105));
}

TEST(FakeClockTest, NonPositiveSleepReturnsAtOnce) {
  FakeClock clock;
  clock.SleepFor(absl::ZeroDuration());
  clock.SleepFor(absl::Seconds(-1));
  EXPECT_EQ(clock.Now(), absl::UnixEpoch());
}

TEST(FakeClockTest, SleeperWakesOnlyWhenTimeReachesItsDeadline) {
  FakeClock clock;
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    clock.SleepFor(absl::Seconds(10));
    woke = true;
  });
  while (clock.sleepers() == 0) absl::SleepFor(absl::Milliseconds(1));

  clock.Advance(absl::Seconds(9));
  absl::SleepFor(absl::Milliseconds(20));  // Give a wrongly-woken sleeper time to show.
  EXPECT_FALSE(woke);
  EXPECT_EQ(clock.sleepers(), 1);

  clock.Advance(absl::Seconds(1));
  sleeper.join();
  EXPECT_TRUE(woke);
  EXPECT_EQ(clock.sleepers(), 0);
}

TEST(RealClockTest, MovesForwardAndSleeps) {
  Clock* clock = Clock::Real();
  ASSERT_NE(clock, nullptr);
  EXPECT_EQ(clock, Clock::Real());
  const absl::Time before = clock->Now();
  clock->SleepFor(absl::Milliseconds(2));
  EXPECT_GE(clock->Now() - before, absl::Milliseconds(2));
}

}  // namespace
}  // namespace semmoe
