#include "planner/autopilot/runner.h"

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace semmoe::planner {

absl::StatusOr<std::unique_ptr<AutopilotRunner>> AutopilotRunner::Start(
    const AutopilotOptions& options, absl::Duration period) {
  // A floor: --autopilot_period=1ns spun at 70% of a core, writing 550 decisions a second.
  if (period < kMinAutopilotPeriod || period > absl::Hours(24)) {
    return absl::InvalidArgumentError(absl::StrCat("--autopilot_period must be between ",
                                                   absl::FormatDuration(kMinAutopilotPeriod),
                                                   " and 24h, got ", absl::FormatDuration(period)));
  }
  absl::StatusOr<std::unique_ptr<Autopilot>> autopilot = Autopilot::Create(options);
  if (!autopilot.ok()) return autopilot.status();
  std::unique_ptr<AutopilotRunner> runner(new AutopilotRunner(std::move(*autopilot), period));
  runner->thread_ = std::thread([r = runner.get()] { r->Loop(); });
  return runner;
}

AutopilotRunner::~AutopilotRunner() { Stop(); }

void AutopilotRunner::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

std::optional<absl::StatusOr<AutopilotDecision>> AutopilotRunner::Latest() const {
  absl::MutexLock lock(&mu_);
  return latest_;
}

void AutopilotRunner::Loop() {
  do {
    absl::StatusOr<AutopilotDecision> d = autopilot_->Tick();
    if (!d.ok()) {
      LOG(ERROR) << "autopilot: cannot record a decision: " << d.status();
    } else if (d->action == "rollout" || d->action == "rollback" || d->action == "error") {
      LOG(INFO) << "autopilot: " << d->action << ": " << d->reason;
    }
    absl::MutexLock lock(&mu_);
    latest_ = std::move(d);
  } while (!stop_.WaitForNotificationWithTimeout(period_));
}

}  // namespace semmoe::planner
