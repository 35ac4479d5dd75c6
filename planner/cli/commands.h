// The planner's commands as functions over Options (planner/main.cc maps flags onto them).
// Each writes its human-readable (or JSON) answer to `out` and returns a Status naming what
// went wrong.
#ifndef SEMMOE_PLANNER_CLI_COMMANDS_H_
#define SEMMOE_PLANNER_CLI_COMMANDS_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/progress.h"
#include "nlohmann/json.hpp"
#include "planner/eval/evaluate.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner::cli {

// A trace file (trace_format.h) or a flat-array trace directory (index.json + tokens.u16 +
// topk_ids.u8); several are concatenated (they must agree on layers, experts and top-k).
absl::StatusOr<trace::TraceSet> LoadTraces(const std::vector<std::string>& paths);

inline constexpr double kBalanceAuto = -2;

struct BuildOptions {
  std::string db;
  std::string model;  // Model name in the store.
  std::vector<std::string> traces;
  int devices = 8;
  std::string mode = "dp";        // dp | tp
  std::string algo = "semantic";  // semantic | vanilla | random | eplb | coact | paper
  std::string name;               // Default: "<algo>-<mode>-g<devices>".
  uint64_t seed = 0;
  double token_balance_eps = 0.05;
  // Expert load per device ≤ (1 + eps) · mean; -1: off; kBalanceAuto: semantic DP takes the
  // cap of least modelled MoE time on held-back profile requests (solver/balance_curve.h),
  // other builds none.
  double expert_balance_eps = kBalanceAuto;
  int balance_groups = 1;  // ... for each of this many request clusters too.
  double link_cost = planner::EvalOptions::kLinkCost;  // The time model's, for kBalanceAuto.
  int replicas = 0;  // Extra slots per device per layer for hot experts (solver/replicas.h).
  // The cluster's topology ("NxM" or a topology file; empty: flat, unless --relative_to's version
  // has one, which is then kept). Locality-aware algorithms (semantic, paper, coact) then put the
  // ranks exchanging most on one node (solver/node_grouping.h), eplb runs its hierarchical mode,
  // and the version records the topology (engines on another one refuse it).
  std::string topology;
  // With a topology: what an activation served on another rank of the token's node is worth to
  // the semantic solver, against 1 for one on the token's own rank and 0 on another node
  // (TopologyCredit). 0: node-blind solve (the grouping alone).
  double node_weight = kDefaultNodeWeight;
  static constexpr double kDefaultNodeWeight = 0;
  static constexpr double kMaxNodeWeight = 1000;  // Larger is refused (inf never finished).
  // Built relative to this version (same model and devices; 0: none): its devices relabelled to
  // keep experts in place, and the moves limited (solver/migration.h).
  int64_t relative_to = 0;
  int max_moved_experts = -1;  // With relative_to: at most this many expert weights shipped.
  double max_lar_loss = 0.01;  // With relative_to: LAR given up to move fewer (negative: none).
  // The checkpoint (HF layout): unseen tokens then borrow the affinity of their nearest seen
  // token in its embedding space. Empty: the layer marginal.
  std::string model_dir;
  // Shows the steps (kBuildSteps: load, solve, tables, metrics, store) as they run; not owned,
  // may be null.
  Progress* progress = nullptr;
};
inline constexpr int kBuildSteps = 5;
// Builds a placement from traces and stores it as a draft version; returns the version.
absl::StatusOr<int64_t> Build(const BuildOptions& options, std::ostream& out);
// The same from traces already in memory (options.traces is recorded with the version as their
// source, not read).
absl::StatusOr<int64_t> BuildFrom(const BuildOptions& options, trace::TraceSet trace,
                                  std::ostream& out);

struct EvalOptions {
  std::string db;
  std::vector<int64_t> versions;
  std::vector<std::string> traces;  // Held-out traces to evaluate on.
  // Traces to learn token affinity from (affinity policies); empty: each version's stored tables
  // (learned from the traces it was built from).
  std::vector<std::string> profile;
  int64_t hidden_size = 0;  // For all-to-all bytes (0: not reported).
  int tp_batch_tokens = 256;
  // Token load per device ≤ (1 + eps) · mean, for the DP router rule (over the trace) and the
  // SRS rule (per batch).
  double token_balance_eps = 0.05;
  bool json = false;
  // Also the TP balanced bound (TpBalancedBound; a few seconds per version at 500k tokens).
  bool balanced_bound = false;
  // Also, per G, the DP solver fitted to these very traces (an in-sample optimum no router can
  // beat in practice) and the capacity bound above it (eval/dp_bound.h; seconds each).
  bool dp_bounds = false;
  // Node figures (node LAR, cross- and intra-node bytes) under this topology ("NxM" or a
  // topology file) for flat versions; a version built for a topology is reported under its own.
  // Empty: only those versions get node figures.
  std::string topology;
  // Shows the steps (EvalSteps: loading, then one per version) as they run; not owned, may be
  // null.
  Progress* progress = nullptr;
};
inline int64_t EvalSteps(const EvalOptions& o) {
  return 1 + static_cast<int64_t>(o.versions.size());
}
// Evaluates versions side by side: DP and TP, blind and affinity data policies, with the
// bounds.
absl::Status Eval(const EvalOptions& options, std::ostream& out);
// The same as rows (one JSON object per version; what `--json` prints).
absl::StatusOr<nlohmann::ordered_json> EvalRows(const EvalOptions& options);
// EvalRows on traces already in memory (options.traces is not read).
absl::StatusOr<nlohmann::ordered_json> EvalRowsOn(const EvalOptions& options,
                                                  const trace::TraceSet& trace);

absl::Status List(const std::string& db, const std::string& model, std::ostream& out);
absl::Status Show(const std::string& db, int64_t version, std::ostream& out);
// Refuses a version predicted slower than vanilla (PlacementStore::CheckPredictedNotSlower)
// unless `force`, which says what it overrides.
absl::Status Activate(const std::string& db, int64_t version, std::ostream& out,
                      bool force = false);
absl::Status Rollback(const std::string& db, const std::string& model, std::ostream& out);
absl::Status Export(const std::string& db, int64_t version, const std::string& file);
// What changes from version `from` to `to` (same model): experts that move per layer and in
// total (each moved expert's weights must be shipped to its new device), and the change in the
// recorded in-sample LAR.
// What moves between two versions of a model (experts per layer) and how their recorded metrics
// change: {"moved", "moved_per_layer", "metrics_from", "metrics_to", "change", ...}.
absl::StatusOr<nlohmann::ordered_json> DiffReport(const std::string& db, int64_t from, int64_t to);
absl::Status Diff(const std::string& db, int64_t from, int64_t to, std::ostream& out);
// Imports a placement JSON (as written by Export or Placement::ToJson) as a new draft.
absl::StatusOr<int64_t> Import(const std::string& db, const std::string& model,
                               const std::string& file, const std::string& name, std::ostream& out);

}  // namespace semmoe::planner::cli

#endif  // SEMMOE_PLANNER_CLI_COMMANDS_H_
