#include "common/stop_signals.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace semmoe {
namespace {

// In a child process, so that the watchdog's exit ends the child, not the test.
int ChildExitStatus(bool stuck) {
  const pid_t pid = fork();
  if (pid == 0) {
    StopSignals& stop = WatchStopSignals("child", absl::Milliseconds(300));
    kill(getpid(), SIGTERM);
    if (!stop.stopped().WaitForNotificationWithTimeout(absl::Seconds(5))) _exit(3);
    if (stop.signal() != SIGTERM || !stop.stopping().load()) _exit(4);
    if (stuck) absl::SleepFor(absl::Seconds(30));  // The watchdog must end this.
    _exit(0);
  }
  const absl::Time start = absl::Now();
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(StopSignalsTest, ASignalStartsTheStop) { EXPECT_EQ(ChildExitStatus(false), 0); }

TEST(StopSignalsTest, AStopThatHangsEndsAtTheBound) { EXPECT_EQ(ChildExitStatus(true), 1); }

}  // namespace
}  // namespace semmoe
