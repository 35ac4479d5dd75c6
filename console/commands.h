// The console's subcommands over PlannerService and RouterService:
//   placements list | show V | diff V1 V2 | activate V | rollback | eval V... --traces T
//   experiments create --a V1 --b V2 --share P | list | status ID | stop ID | promote ID [--arm]
//   cluster status
// Each writes an aligned table (or JSON with `json`) to `out` and returns OK, or an error whose
// message is one line naming what failed. Destructive ones (activate, rollback, stop, promote)
// ask for confirmation on `in` unless `yes`; without a terminal they refuse instead.
#ifndef SEMMOE_CONSOLE_COMMANDS_H_
#define SEMMOE_CONSOLE_COMMANDS_H_

#include <cstdint>
#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "planner/proto/planner.grpc.pb.h"
#include "router/proto/router.grpc.pb.h"

namespace semmoe::console {

struct ConsoleOptions {
  std::string planner = "127.0.0.1:7070";
  std::string router = "127.0.0.1:8000";
  std::string model;  // For list, rollback and experiments.
  bool json = false;
  bool yes = false;
  // activate, experiments promote: override the planner's guard (a version predicted slower
  // than vanilla, an arm measured slower than the vanilla arm).
  bool force = false;
  bool interactive = false;  // Whether `in` is a terminal (confirmation prompts).
  absl::Duration deadline = absl::Seconds(30);
  // Subcommand flags.
  std::vector<std::string> traces;
  int64_t a = 0, b = 0;
  int share = 0;
  std::string name, arm;
  // activate, rollback, promote: wait until the engine groups serve the version.
  bool wait = true;
  absl::Duration rollout_timeout = absl::Minutes(10);
};

class Console {
 public:
  Console(const ConsoleOptions& options, std::ostream& out, std::istream& in);

  // `args`: the positional words, e.g. {"placements", "diff", "3", "5"}. InvalidArgument for a
  // malformed command (the caller shows usage).
  absl::Status Run(const std::vector<std::string>& args);

 private:
  absl::Status PlacementsList();
  absl::Status PlacementsShow(int64_t version);
  absl::Status PlacementsDiff(int64_t from, int64_t to);
  absl::Status PlacementsActivate(int64_t version);
  absl::Status PlacementsRollback();
  absl::Status PlacementsEval(const std::vector<int64_t>& versions);
  absl::Status ExperimentsCreate();
  absl::Status ExperimentsList();
  absl::Status ExperimentsStatus(int64_t id);
  absl::Status ExperimentsStop(int64_t id);
  absl::Status ExperimentsPromote(int64_t id);
  absl::Status ClusterStatus();
  absl::Status AutopilotStatus();
  absl::Status PlacementsDrift(int64_t version);
  // One drift report (planner/cli/drift.h) as a line and a per-layer table; `who` names the
  // group.
  void PrintDrift(const nlohmann::json& report, const std::string& who);

  // Waits (unless !wait) until every group following the active version serves `version`; on a
  // refusal or a dead group re-activates `previous` (> 0) and says so.
  absl::Status Rollout(int64_t version, int64_t previous);
  // Waits until the groups serve `version`: those following the active version, or with `push`
  // every group, each told by a Rollout call to its rank 0.
  absl::Status AwaitRollout(int64_t version, bool push);
  absl::Status Confirm(const std::string& question);
  void PrintExperiment(const planner::rpc::Experiment& e);

  const ConsoleOptions o_;
  std::ostream& out_;
  std::istream& in_;
  std::unique_ptr<planner::rpc::PlannerService::Stub> planner_;
  std::unique_ptr<router::rpc::RouterService::Stub> router_;
};

}  // namespace semmoe::console

#endif  // SEMMOE_CONSOLE_COMMANDS_H_
