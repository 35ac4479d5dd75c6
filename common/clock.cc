#include "common/clock.h"

#include "absl/time/clock.h"

namespace semmoe {
namespace {

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  void SleepFor(absl::Duration duration) override {
    if (duration > absl::ZeroDuration()) absl::SleepFor(duration);
  }
};

}  // namespace

Clock* Clock::Real() {
  // Intentionally leaked: a function-local static with no destructor-order hazards.
  static Clock* const clock = new RealClock();
  return clock;
}

}  // namespace semmoe
