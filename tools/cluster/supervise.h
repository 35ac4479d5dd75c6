// Running a cluster's processes (local_cluster, tools/netlab): stopping them in order, and
// watching them until a stop signal or a failure.
#ifndef SEMMOE_TOOLS_CLUSTER_SUPERVISE_H_
#define SEMMOE_TOOLS_CLUSTER_SUPERVISE_H_

#include <signal.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tools/cluster/launch.h"
#include "tools/cluster/process.h"

namespace semmoe::tools {

struct Cluster {
  std::string run_dir;
  std::unique_ptr<Process> planner;
  int planner_port = 0;
  int planner_metrics_port = 0;
  std::vector<EngineGroup> groups;  // One; or one per A/B arm.
  std::unique_ptr<Process> router;
  int router_port = 0;
  int http_port = 0;  // The router's OpenAI-compatible HTTP (0: off).
};

// Blocks SIGINT and SIGTERM in this thread (and the threads it starts) before any starts; the
// set, for Supervise and LaunchEngines to wait on.
sigset_t BlockStopSignals();

// `dir` (created if missing), or a fresh /tmp/semmoe-NAME-XXXXXX when `dir` is empty.
absl::StatusOr<std::string> MakeRunDir(const std::string& dir, const std::string& name);

// SIGTERM to the router, then every engine (each asks its group to stop), then the planner;
// SIGKILL stragglers (each stage bounded: about 30 s in all at worst). True if every rank
// stopped cleanly.
bool StopAll(Cluster& c);

// A rank that died, preferring one killed by a signal (the cause) over those that exited because
// their peers vanished: its group and index, or nullopt.
std::optional<std::pair<EngineGroup*, int>> DeadRank(Cluster& c);

struct SuperviseOptions {
  // Restart a rank, the router or the planner that exits, on the same ports, after a backoff
  // (first_backoff, doubling to max_backoff; back to first_backoff once a child has run
  // healthy_after). False: the first exit stops the cluster.
  bool restart = true;
  absl::Duration first_backoff = absl::Milliseconds(500);
  absl::Duration max_backoff = absl::Seconds(10);
  absl::Duration healthy_after = absl::Seconds(60);
};

// Runs until a signal of `stop` arrives (then stops everything: 0 if cleanly, else 1). A child
// that exits is named with its log's tail and restarted (options.restart) — a restarted rank
// rejoins its group, which re-forms — or else the rest are stopped and 1 returned. Messages start
// with "NAME: ".
int Supervise(Cluster& c, sigset_t& stop, const std::string& name,
              const SuperviseOptions& options = {});

}  // namespace semmoe::tools

#endif  // SEMMOE_TOOLS_CLUSTER_SUPERVISE_H_
