#include "tools/cluster/supervise.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <iostream>
#include <optional>
#include <vector>

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

namespace {

// Each binary bounds its own stop (router and planner 5 s, an engine rank 10 s, then it exits
// anyway); these leave a little over that before SIGKILL, so that a stop of the whole cluster
// is bounded too (about 30 s at worst, however many ranks).
constexpr absl::Duration kRouterStop = absl::Seconds(7);
constexpr absl::Duration kEnginesStop = absl::Seconds(13);
constexpr absl::Duration kPlannerStop = absl::Seconds(7);

void StopOne(Process& p, absl::Duration bound) {
  p.Signal(SIGTERM);
  if (!p.WaitFor(bound)) {
    p.Signal(SIGKILL);
    p.WaitFor(absl::Seconds(5));
  }
}

}  // namespace

bool StopAll(Cluster& c) {
  if (c.router != nullptr) StopOne(*c.router, kRouterStop);
  for (EngineGroup& g : c.groups) {
    for (auto& e : g.processes) e->Signal(SIGTERM);
  }
  bool clean = true;
  const absl::Time deadline = absl::Now() + kEnginesStop;  // One for all the ranks.
  for (EngineGroup& g : c.groups) {
    for (size_t r = 0; r < g.processes.size(); ++r) {
      if (!g.processes[r]->WaitFor(std::max(deadline - absl::Now(), absl::ZeroDuration()))) {
        std::cerr << "cluster: " << g.name << (g.name.empty() ? "" : " ") << "rank " << r
                  << " did not stop; killing it\n";
        g.processes[r]->Signal(SIGKILL);
        g.processes[r]->WaitFor(absl::Seconds(5));
        clean = false;
      }
      clean &= g.processes[r]->exited_ok();
    }
  }
  if (c.planner != nullptr) StopOne(*c.planner, kPlannerStop);
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

namespace {

// A child the supervisor restarts: where it lives in the cluster and the flags that pin it to
// the ports it had, so its peers and clients find it again.
struct Child {
  std::string name;
  std::unique_ptr<Process>* process;
  std::vector<std::string> pinned;
  absl::Time started = absl::Now();
  absl::Duration backoff;
  std::optional<absl::Time> restart_at;
  int restarts = 0;
};

std::vector<Child> Children(Cluster& c, absl::Duration backoff) {
  std::vector<Child> out;
  if (c.planner != nullptr) {
    out.push_back({.name = "the planner",
                   .process = &c.planner,
                   .pinned = {"--port", absl::StrCat(c.planner_port), "--metrics_port",
                              absl::StrCat(c.planner_metrics_port)}});
  }
  for (EngineGroup& g : c.groups) {
    for (size_t r = 0; r < g.processes.size(); ++r) {
      Child child = {.name = absl::StrCat(g.name, g.name.empty() ? "" : " ", "rank ", r),
                     .process = &g.processes[r],
                     .pinned = {"--port", absl::StrCat(g.ports[r])}};
      if (r < g.metrics_ports.size()) {
        child.pinned.insert(child.pinned.end(),
                            {"--metrics_port", absl::StrCat(g.metrics_ports[r])});
      }
      out.push_back(std::move(child));
    }
  }
  if (c.router != nullptr) {
    Child child = {.name = "the router",
                   .process = &c.router,
                   .pinned = {"--port", absl::StrCat(c.router_port)}};
    if (c.http_port > 0) {
      child.pinned.insert(child.pinned.end(), {"--http_port", absl::StrCat(c.http_port)});
    }
    out.push_back(std::move(child));
  }
  for (Child& child : out) child.backoff = backoff;
  return out;
}

// Restarts `child` with its first command line and its pinned ports; false if it cannot start.
bool Restart(Child& child, const std::string& name) {
  std::vector<std::string> argv = (*child.process)->argv();
  argv.insert(argv.end(), child.pinned.begin(), child.pinned.end());
  absl::StatusOr<std::unique_ptr<Process>> p = Process::Spawn(argv, (*child.process)->log_path());
  if (!p.ok()) {
    std::cerr << name << ": cannot restart " << child.name << ": " << p.status().message() << "\n";
    return false;
  }
  *child.process = std::move(*p);
  child.started = absl::Now();
  ++child.restarts;
  std::cout << name << ": restarted " << child.name << " (pid " << (*child.process)->pid()
            << ", restart " << child.restarts << ")" << std::endl;
  return true;
}

}  // namespace

int Supervise(Cluster& c, sigset_t& stop, const std::string& name,
              const SuperviseOptions& options) {
  std::vector<Child> children = Children(c, options.first_backoff);
  while (true) {
    timespec tick = {0, 200 * 1000 * 1000};
    const int signal = sigtimedwait(&stop, nullptr, &tick);
    if (signal > 0) {
      std::cout << name << ": stopping" << std::endl;
      const bool clean = StopAll(c);
      std::cout << name << (clean ? ": stopped cleanly" : ": stopped (unclean)") << std::endl;
      return clean ? 0 : 1;
    }
    if (!options.restart) {
      if (DeadRank(c).has_value()) {
        absl::SleepFor(absl::Milliseconds(300));  // Let the others notice; report the cause.
        const auto [group, r] = *DeadRank(c);
        Process& p = *group->processes[r];
        std::cerr << name << ": " << group->name << (group->name.empty() ? "" : " ") << "rank " << r
                  << " exited (" << *p.Poll() << "); stopping the cluster. " << p.log_path()
                  << ":\n"
                  << Tail(p.log_path(), 10);
        StopAll(c);
        return 1;
      }
      for (Child& child : children) {
        if (auto status = (*child.process)->Poll()) {
          std::cerr << name << ": " << child.name << " exited (" << *status
                    << "); stopping the cluster. " << (*child.process)->log_path() << ":\n"
                    << Tail((*child.process)->log_path(), 10);
          StopAll(c);
          return 1;
        }
      }
      continue;
    }
    const absl::Time now = absl::Now();
    for (Child& child : children) {
      if (child.restart_at.has_value()) {
        if (now < *child.restart_at) continue;
        child.restart_at.reset();
        if (!Restart(child, name)) {
          child.backoff = std::min(child.backoff * 2, options.max_backoff);
          child.restart_at = now + child.backoff;
        }
        continue;
      }
      std::optional<std::string> status = (*child.process)->Poll();
      if (!status.has_value()) continue;
      if (now - child.started >= options.healthy_after) child.backoff = options.first_backoff;
      std::cerr << name << ": " << child.name << " exited (" << *status << "); restarting it in "
                << absl::FormatDuration(child.backoff) << ". " << (*child.process)->log_path()
                << ":\n"
                << Tail((*child.process)->log_path(), 6);
      child.restart_at = now + child.backoff;
      child.backoff = std::min(child.backoff * 2, options.max_backoff);
    }
  }
}

}  // namespace semmoe::tools
