// Child processes for the local cluster: spawned with their output in a log file, killed with
// the parent (PR_SET_PDEATHSIG), reaped without blocking.
#ifndef SEMMOE_TOOLS_CLUSTER_PROCESS_H_
#define SEMMOE_TOOLS_CLUSTER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace semmoe::tools {

class Process {
 public:
  // Starts argv[0] (a path) with `argv`; stdout and stderr go to `log_path` (appended). The child
  // gets SIGTERM if this process dies.
  static absl::StatusOr<std::unique_ptr<Process>> Spawn(const std::vector<std::string>& argv,
                                                        const std::string& log_path);
  ~Process();  // Kills (SIGKILL) and reaps a child still running.

  pid_t pid() const { return pid_; }
  const std::vector<std::string>& argv() const { return argv_; }
  const std::string& log_path() const { return log_path_; }
  void Signal(int signal);
  // The exit status once it has ended ("exit N" / "signal N"), else nullopt; never blocks.
  std::optional<std::string> Poll();
  // Waits up to `timeout` for the end; true if it ended.
  bool WaitFor(absl::Duration timeout);
  bool exited_ok() const { return exited_ok_; }

 private:
  Process(pid_t pid, std::vector<std::string> argv, std::string log_path)
      : pid_(pid), argv_(std::move(argv)), log_path_(std::move(log_path)) {}
  pid_t pid_;
  std::vector<std::string> argv_;
  std::string log_path_;
  std::optional<std::string> status_;
  bool exited_ok_ = false;
};

// The last `lines` lines of a file ("" if unreadable).
std::string Tail(const std::string& path, int lines);

}  // namespace semmoe::tools

#endif  // SEMMOE_TOOLS_CLUSTER_PROCESS_H_
