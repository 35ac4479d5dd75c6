// `planner drift`: how far live traffic has drifted from what a placement version was planned
// for. The version's data rule (the DP router's affinity rule, or Attention-TP's shuffled
// reduce-scatter) runs over live routing traces (engine serve --sample_routing), and per MoE layer
// the LAR and the expert load (busiest device / mean) it gets there sit beside the figures the
// version was built with (its in-sample metrics). A large LAR drop says: plan a new version from
// the live traces (`planner build --traces LIVE`), A/B test it, promote it.
#ifndef SEMMOE_PLANNER_CLI_DRIFT_H_
#define SEMMOE_PLANNER_CLI_DRIFT_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "planner/trace/trace_set.h"

namespace semmoe::planner::cli {

struct DriftOptions {
  std::string db;
  int64_t version = 0;
  std::vector<std::string> live;  // Live routing traces.
  double token_balance_eps = 0.05;
  bool json = false;
};

// {"version", "mode", "live_requests", "live_tokens", "planned_lar", "live_lar", "lar_drift",
//  "planned_expert_load", "live_expert_load", "layers": [{"layer", "planned_lar", "live_lar",
//  "lar_drift", "planned_expert_load", "live_expert_load"}]} — per-layer planned figures are
// null for versions built before they were recorded. Errors name the version or the trace: no
// affinity tables, a trace of another model, an empty or unreadable trace.
absl::StatusOr<nlohmann::ordered_json> DriftReport(const DriftOptions& options);
// The same over live traces already in memory (options.live is not read).
absl::StatusOr<nlohmann::ordered_json> DriftReportOn(const DriftOptions& options,
                                                    const trace::TraceSet& live);
absl::Status Drift(const DriftOptions& options, std::ostream& out);

}  // namespace semmoe::planner::cli

#endif  // SEMMOE_PLANNER_CLI_DRIFT_H_
