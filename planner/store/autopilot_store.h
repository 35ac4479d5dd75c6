// The autopilot's decisions (planner/autopilot/autopilot.h), in the planner's database: one row
// per decision — what it did (`action`), why (`reason`), the figures it decided on (a JSON
// object) and the versions and experts involved. Rows are append-only (triggers refuse edits and
// deletes), so the history operators read in the console, the TUI and /metrics is what happened.
//
// Thread-compatible, like PlacementStore; uses the PlacementStore's database (same schema list).
#ifndef SEMMOE_PLANNER_STORE_AUTOPILOT_STORE_H_
#define SEMMOE_PLANNER_STORE_AUTOPILOT_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "planner/store/placement_store.h"

namespace semmoe::planner {

struct AutopilotDecision {
  int64_t id = 0;  // Set by Record.
  std::string model;
  absl::Time at;  // Set by Record (the store's clock).
  // What the loop did: "steady" (no drift past the threshold), "wait" (too soon after the last
  // rollout, too little traffic to plan from, nothing active), "refuse" (a candidate was built
  // but did not beat the served version), "rollout", "rollback", "error".
  std::string action;
  std::string reason;
  int64_t served_version = 0;     // The active version when it decided (0: none).
  int64_t candidate_version = 0;  // The version built, rolled out or rolled back to (0: none).
  int moved_experts = -1;         // Expert weights the rollout ships (-1: not a rollout).
  std::string figures_json = "{}";
  // How many times in a row the loop decided exactly this (set by Record: a wait, steady or
  // error identical to the model's previous decision is counted on that row, not appended), and
  // when it last did.
  int64_t repeats = 1;
  absl::Time last_at;
};

// Whether `action` is one of the actions above.
bool IsAutopilotAction(const std::string& action);

class AutopilotStore {
 public:
  // REQUIRES: `placements` outlives this (its database holds the decisions table).
  explicit AutopilotStore(PlacementStore& placements) : placements_(placements) {}

  // Appends a decision; returns its id. A wait, steady or error identical (action, reason,
  // versions, moves, figures) to the model's latest decision is counted on that row instead
  // (`repeats`, `last_at`) and its id returned. NotFound for an unknown model; InvalidArgument
  // for an unknown action or figures that are not a JSON object.
  absl::StatusOr<int64_t> Record(const AutopilotDecision& decision);
  // The model's latest `limit` decisions, newest first.
  absl::StatusOr<std::vector<AutopilotDecision>> Latest(const std::string& model, int limit);
  // Decisions per action over the model's whole history, repeats included (for /metrics), sorted
  // by action.
  absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> Counts(const std::string& model);

 private:
  PlacementStore& placements_;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_STORE_AUTOPILOT_STORE_H_
