// Clock interface: every component that reads time or sleeps takes a Clock* in its Options, so
// tests can drive time with FakeClock (common/testing/fake_clock.h).
#ifndef SEMMOE_COMMON_CLOCK_H_
#define SEMMOE_COMMON_CLOCK_H_

#include "absl/time/time.h"

namespace semmoe {

// Thread-safe: implementations may be called from any thread.
class Clock {
 public:
  virtual ~Clock() = default;

  // The current time.
  virtual absl::Time Now() const = 0;

  // Blocks the calling thread for `duration` of this clock's time (returns at once if <= 0).
  virtual void SleepFor(absl::Duration duration) = 0;

  // The process-wide wall clock. Never null; not owned by the caller; lives forever.
  static Clock* Real();
};

}  // namespace semmoe

#endif  // SEMMOE_COMMON_CLOCK_H_
