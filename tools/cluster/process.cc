#include "tools/cluster/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace semmoe::tools {

absl::StatusOr<std::unique_ptr<Process>> Process::Spawn(const std::vector<std::string>& argv,
                                                        const std::string& log_path) {
  if (argv.empty()) return absl::InvalidArgumentError("no program to start");
  const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) {
    return absl::UnavailableError(absl::StrCat("cannot open ", log_path, ": ", strerror(errno)));
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log);
    return absl::UnavailableError(absl::StrCat("fork: ", strerror(errno)));
  }
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // The parent died before prctl.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // The parent blocks its stop signals.
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(log);
  return std::unique_ptr<Process>(new Process(pid, argv, log_path));
}

Process::~Process() {
  if (!Poll().has_value()) {
    kill(pid_, SIGKILL);
    WaitFor(absl::Seconds(5));
  }
}

void Process::Signal(int signal) {
  if (!status_.has_value()) kill(pid_, signal);
}

std::optional<std::string> Process::Poll() {
  if (status_.has_value()) return status_;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  if (WIFEXITED(status)) {
    status_ = absl::StrCat("exit ", WEXITSTATUS(status));
    exited_ok_ = WEXITSTATUS(status) == 0;
  } else {
    status_ = absl::StrCat("signal ", WTERMSIG(status));
  }
  return status_;
}

bool Process::WaitFor(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!Poll().has_value()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

std::string Tail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const std::string& l : last) absl::StrAppend(&out, "    ", l, "\n");
  return out;
}

}  // namespace semmoe::tools
