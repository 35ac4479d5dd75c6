// SIGINT/SIGTERM for a server binary (engine serve, router, planner serve): the first one starts
// the stop, and the process exits within a bound whatever it is doing — a worker stuck in a
// render, a collective waiting for a peer that is gone — saying so on stderr.
#ifndef SEMMOE_COMMON_STOP_SIGNALS_H_
#define SEMMOE_COMMON_STOP_SIGNALS_H_

#include <atomic>
#include <string>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace semmoe {

class StopSignals {
 public:
  // The stop, seen by the rest of the process.
  absl::Notification& stopped() { return stopped_; }
  // True once a stop signal arrived (for loops and renders that poll: cancellation).
  const std::atomic<bool>& stopping() const { return stopping_; }
  // The signal that arrived (0 until one did).
  int signal() const { return signal_.load(); }

 private:
  friend StopSignals& WatchStopSignals(const std::string&, absl::Duration);
  StopSignals() = default;
  absl::Notification stopped_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> signal_{0};
};

// Blocks SIGINT and SIGTERM in the calling thread — call it before any thread starts, as
// threads inherit the mask — and starts a thread that takes the first one: it sets stopping(),
// notifies stopped(), and if the process is still running `bound` later, writes "PROGRAM: did not
// stop within BOUND of signal N; exiting now" to stderr and exits with status 1. Call once per
// process; the state lives as long as the process.
StopSignals& WatchStopSignals(const std::string& program, absl::Duration bound);

}  // namespace semmoe

#endif  // SEMMOE_COMMON_STOP_SIGNALS_H_
