// Runs an Autopilot in a thread: a Tick() every `period` until Stop() (planner serve
// --autopilot). The latest decision is kept for whoever reports the loop's state.
//
// Thread-safe.
#ifndef SEMMOE_PLANNER_AUTOPILOT_RUNNER_H_
#define SEMMOE_PLANNER_AUTOPILOT_RUNNER_H_

#include <memory>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "planner/autopilot/autopilot.h"

namespace semmoe::planner {

// The shortest tick period the autopilot takes (each tick reads the live traces).
inline constexpr absl::Duration kMinAutopilotPeriod = absl::Milliseconds(100);

class AutopilotRunner {
 public:
  // Creates the Autopilot (its errors: Autopilot::Create's) and starts ticking, the first tick
  // at once. InvalidArgument for a period that is not positive.
  static absl::StatusOr<std::unique_ptr<AutopilotRunner>> Start(const AutopilotOptions& options,
                                                                absl::Duration period);
  ~AutopilotRunner();  // Stops.

  // Waits for the tick under way, if any, and stops. Idempotent.
  void Stop();
  // The latest decision (none before the first tick has recorded one); ticks that could not
  // record theirs leave the error here instead.
  std::optional<absl::StatusOr<AutopilotDecision>> Latest() const;

 private:
  AutopilotRunner(std::unique_ptr<Autopilot> autopilot, absl::Duration period)
      : autopilot_(std::move(autopilot)), period_(period) {}
  void Loop();

  std::unique_ptr<Autopilot> autopilot_;
  const absl::Duration period_;
  absl::Notification stop_;
  std::thread thread_;
  mutable absl::Mutex mu_;
  std::optional<absl::StatusOr<AutopilotDecision>> latest_ ABSL_GUARDED_BY(mu_);
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_AUTOPILOT_RUNNER_H_
