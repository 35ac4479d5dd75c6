#include "common/testing/fake_clock.h"

namespace semmoe {

FakeClock::FakeClock(absl::Time start) : now_(start) {}

absl::Time FakeClock::Now() const {
  absl::MutexLock lock(&mu_);
  return now_;
}

void FakeClock::SleepFor(absl::Duration duration) {
  absl::MutexLock lock(&mu_);
  if (duration <= absl::ZeroDuration()) return;
  const absl::Time wake = now_ + duration;
  ++sleepers_;
  // Runs under mu_, as Await requires.
  auto woken = [this, wake]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return now_ >= wake; };
  mu_.Await(absl::Condition(&woken));
  --sleepers_;
}

void FakeClock::Advance(absl::Duration delta) {
  absl::MutexLock lock(&mu_);
  if (delta > absl::ZeroDuration()) now_ += delta;
}

int FakeClock::sleepers() const {
  absl::MutexLock lock(&mu_);
  return sleepers_;
}

}  // namespace semmoe
