// Process-wide logging set-up on glog (LOG, VLOG, CHECK: the same API as newer absl/log).
//
// Call InitLogging once from main() before any other thread starts. Binaries map their own
// flags (e.g. --v, --log_dir) into LoggingOptions; libraries never call this.
#ifndef SEMMOE_COMMON_LOGGING_H_
#define SEMMOE_COMMON_LOGGING_H_

#include <string>

namespace semmoe {

struct LoggingOptions {
  // VLOG(n) is printed for n <= verbosity. 0 (default) prints no VLOG; negative is treated as 0.
  int verbosity = 0;
  // Empty (default): log to stderr only. Otherwise also write glog's per-severity files there;
  // the directory must exist.
  std::string log_dir;
  // Messages at or above this severity (0=INFO, 1=WARNING, 2=ERROR, 3=FATAL) go to stderr.
  int stderr_threshold = 0;
};

// Initialises glog for the program named `argv0` and installs the failure-signal handler that
// prints a stack trace on a crash. Safe to call more than once: later calls only update the
// options (verbosity, log_dir, stderr_threshold).
void InitLogging(const char* argv0, const LoggingOptions& options = {});

}  // namespace semmoe

#endif  // SEMMOE_COMMON_LOGGING_H_
