// Starting the processes of a local cluster: a placement version checked for engines, a group
// of `engine serve` ranks (waited for until each answers), and waiting for a port file.
#ifndef SEMMOE_TOOLS_CLUSTER_LAUNCH_H_
#define SEMMOE_TOOLS_CLUSTER_LAUNCH_H_

#include <signal.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "planner/store/placement_store.h"
#include "tools/cluster/process.h"

namespace semmoe::tools {

// Waits for `port_file` while `process` runs; the port, or an error with the process's log.
absl::StatusOr<int> WaitForPort(Process& process, const std::string& port_file,
                                const std::string& what, absl::Time deadline);

// Whether a --placement value names a version (all digits) rather than a file or "vanilla".
bool IsVersionNumber(const std::string& placement);

// A version in the database the engines will fetch from the planner: checked against the group
// size (InvalidArgument naming both), described for the operator.
struct VersionInfo {
  std::string description;  // "version 3 (semantic-dp-g4, semantic)".
  bool has_tables = false;  // Whether affinity tables are stored with it.
  std::string model;        // The planner's model name.
  bool active = false;      // Whether it is the model's active version.
};
absl::StatusOr<VersionInfo> CheckVersion(planner::PlacementStore& store, int64_t version,
                                         int ranks);

struct EngineGroupSpec {
  std::string name;  // Prefix of its files ("" for the only group; an arm's name in A/B).
  std::string engine_binary, model, attn = "dp", placement = "vanilla";
  std::string affinity, layer_tables;  // Optional files.
  bool use_layer_tables = true;        // false: Attention-TP predicts from the T tables alone.
  std::string planner;  // HOST:PORT: `placement` is a version the ranks fetch (with its tables).
  std::string follow_active;  // With `planner`: the model whose active version the group follows.
  std::string rendezvous;     // "file:DIR" or "grpc:HOST:PORT".
  int ranks = 1;
  int kv_cache_mb = 256;
  std::string run_dir;  // Logs and port files.
  bool cuda = false;    // Rank r runs its forward on CUDA device first_cuda_device + r.
  int first_cuda_device = 0;
  double rollout_mb_per_s = -1;  // engine serve --rollout_mb_per_s; < 0: its default.
  double sample_routing = 0;     // > 0: rank r writes its live trace to run_dir/rank<r>.trace.
  bool metrics = true;  // Each rank serves Prometheus /metrics on a free port (metrics_ports).
  std::vector<std::string> extra_flags;  // Appended to every rank's command (e.g. TLS flags).
  // Where rank r runs, for emulated hosts (tools/netlab): its address (EngineService and the
  // Gloo mesh listen there; unset: 127.0.0.1) and the argv prefix that starts it there (e.g.
  // `ip netns exec NS`; unset: none).
  std::function<std::string(int rank)> host;
  std::function<std::vector<std::string>(int rank)> launcher;
};

struct EngineGroup {
  std::string name;
  std::vector<std::unique_ptr<Process>> processes;
  std::vector<std::string> hosts;  // Each rank's address.
  std::vector<int> ports;
  std::vector<int> metrics_ports;  // Each rank's /metrics port (when the spec asked for them).
  std::vector<bool> accepts;       // Whether each rank takes requests (TP followers do not).
  std::string Addresses() const;   // "HOST:P,HOST:Q,..." (accepting ranks).
};

// Spawns the ranks (appending them to `out` as they start, so a failure can stop them), waits
// until each serves and answers GetStats. Cancelled when a signal of `stop` arrives meanwhile.
absl::Status LaunchEngines(const EngineGroupSpec& spec, absl::Time deadline, sigset_t& stop,
                           EngineGroup& out);

}  // namespace semmoe::tools

#endif  // SEMMOE_TOOLS_CLUSTER_LAUNCH_H_
