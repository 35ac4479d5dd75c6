#include "common/stop_signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <thread>

#include "absl/time/clock.h"

namespace semmoe {

StopSignals& WatchStopSignals(const std::string& program, absl::Duration bound) {
  // Never destroyed: the watchdog thread may outlive main's return.
  static StopSignals* const state = new StopSignals();
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  std::thread([stop, program, bound] {
    int signal = 0;
    sigwait(&stop, &signal);
    state->signal_.store(signal);
    state->stopping_.store(true);
    state->stopped_.Notify();
    absl::SleepFor(bound);
    std::cerr << program << ": did not stop within " << absl::FormatDuration(bound) << " of signal "
              << signal << "; exiting now" << std::endl;
    _exit(1);
  }).detach();
  return *state;
}

}  // namespace semmoe
