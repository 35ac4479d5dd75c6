// FakeClock: a Clock whose time moves only when a test says so.
#ifndef SEMMOE_COMMON_TESTING_FAKE_CLOCK_H_
#define SEMMOE_COMMON_TESTING_FAKE_CLOCK_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace semmoe {

// Thread-safe. SleepFor() blocks until other threads have advanced the clock far enough, so a
// test can hold a sleeping component at a known point; Advance() wakes every sleeper whose
// deadline has passed.
class FakeClock final : public Clock {
 public:
  // Starts at `start` (the Unix epoch by default, so times print readably).
  explicit FakeClock(absl::Time start = absl::UnixEpoch());

  absl::Time Now() const override;
  void SleepFor(absl::Duration duration) override;

  // Moves time forward by `delta` (ignored if negative: time never goes back).
  void Advance(absl::Duration delta);

  // Number of threads currently blocked in SleepFor().
  int sleepers() const;

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  int sleepers_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace semmoe

#endif  // SEMMOE_COMMON_TESTING_FAKE_CLOCK_H_
