#include "tools/cluster/supervise.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include <cerrno>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace semmoe::tools {

sigset_t BlockStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  return stop;
}

absl::StatusOr<std::string> MakeRunDir(const std::string& dir, const std::string& name) {
  if (dir.empty()) {
    std::string pattern = absl::StrCat("/tmp/semmoe-", name, "-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::UnavailableError("cannot create a run directory in /tmp");
    }
    return pattern;
  }
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("cannot create ", dir));
  }
  return dir;
}

bool StopAll(Cluster& c) {
  if (c.router != nullptr) {
    c.router->Signal(SIGTERM);
    if (!c.router->WaitFor(absl::Seconds(10))) c.router->Signal(SIGKILL);
  }
  for (EngineGroup& g : c.groups) {
    for (auto& e : g.processes) e->Signal(SIGTERM);
  }
  bool clean = true;
  for (EngineGroup& g : c.groups) {
    for (size_t r = 0; r < g.processes.size(); ++r) {
      if (!g.processes[r]->WaitFor(absl::Seconds(20))) {
        std::cerr << "cluster: " << g.name << (g.name.empty() ? "" : " ") << "rank " << r
                  << " did not stop; killing it\n";
        g.processes[r]->Signal(SIGKILL);
        g.processes[r]->WaitFor(absl::Seconds(5));
        clean = false;
      }
      clean &= g.processes[r]->exited_ok();
    }
  }
  if (c.planner != nullptr) {
    c.planner->Signal(SIGTERM);
    if (!c.planner->WaitFor(absl::Seconds(10))) c.planner->Signal(SIGKILL);
  }
  return clean;
}

std::optional<std::pair<EngineGroup*, int>> DeadRank(Cluster& c) {
  std::optional<std::pair<EngineGroup*, int>> dead;
  for (EngineGroup& g : c.groups) {
    for (size_t r = 0; r < g.processes.size(); ++r) {
      if (auto status = g.processes[r]->Poll()) {
        if (!dead.has_value() || absl::StartsWith(*status, "signal")) {
          dead = {&g, static_cast<int>(r)};
        }
      }
    }
  }
  return dead;
}

int Supervise(Cluster& c, sigset_t& stop, const std::string& name) {
  while (true) {
    timespec tick = {0, 200 * 1000 * 1000};
    const int signal = sigtimedwait(&stop, nullptr, &tick);
    if (signal > 0) {
      std::cout << name << ": stopping" << std::endl;
      const bool clean = StopAll(c);
      std::cout << name << (clean ? ": stopped cleanly" : ": stopped (unclean)") << std::endl;
      return clean ? 0 : 1;
    }
    if (DeadRank(c).has_value()) {
      absl::SleepFor(absl::Milliseconds(300));  // Let the others notice; then report the cause.
      const auto [group, r] = *DeadRank(c);
      Process& p = *group->processes[r];
      std::cerr << name << ": " << group->name << (group->name.empty() ? "" : " ") << "rank " << r
                << " exited (" << *p.Poll() << "); stopping the cluster. " << p.log_path() << ":\n"
                << Tail(p.log_path(), 10);
      StopAll(c);
      return 1;
    }
    if (c.router != nullptr && c.router->Poll().has_value()) {
      std::cerr << name << ": the router exited; stopping the cluster. " << c.router->log_path()
                << ":\n"
                << Tail(c.router->log_path(), 10);
      StopAll(c);
      return 1;
    }
    if (c.planner != nullptr && c.planner->Poll().has_value()) {
      std::cerr << name << ": the planner exited; stopping the cluster\n";
      StopAll(c);
      return 1;
    }
  }
}

}  // namespace semmoe::tools
