// The autopilot (`planner serve --autopilot`, docs/PLANNER.md "Autopilot"): re-plans a model's
// placement by itself when live traffic drifts from what the active version was planned for.
// Each Tick():
//   1. reads the live routing traces the ranks sample (engine serve --sample_routing) as the
//      window; too few tokens to plan from → "wait";
//   2. after a rollout, once the window holds other traffic than the one it was decided on:
//      the rolled-out version against the one before it on the window (LAR under the mode's
//      data rule); worse by more than rollback_margin → re-activates the one before ("rollback");
//   3. replays the active version's data rule over the window (planner drift); a LAR drop from
//      what it was planned for within drift_threshold and expert shares within shift_threshold
//      of the traffic it was planned from → "steady" — unless the last rollout spent the whole
//      expert budget and the window holds traffic after it: then the migration goes on (steps
//      4-6) until a candidate gains too little — and once more (migration_retries) when the
//      window has turned over after that refusal: a noisy window must not end a migration a
//      point short. While a rollout is not yet served and checked
//      where it serves (below) → "wait";
//   4. a drift seen for less than drift_confirm, or too soon after the last rollout, rollback or
//      refused candidate (min_interval) → "wait": no version is built more often, however long
//      the traffic stays shifted;
//   5. builds a candidate from half the window's requests relative to the active version
//      (planner build --relative_to, at most max_moved_experts weights shipped), and checks both
//      on the other half: a gain under min_gain → "refuse" (the candidate stays a draft);
//   6. builds the same from the whole window (its tables then know twice the tokens; the same
//      budget) and activates it ("rollout"): engines that follow the active version roll it out.
// With a ServingBoard (the groups that follow the model report what they serve,
// PlannerService.ReportServing), a rollout is also checked where it serves: a group that refuses
// it, or that does not switch to it within rollout_timeout, or serving's own LAR or failed share
// (the whole group's counters) after the switch worse than under the old version on the shifted
// traffic (from the drift's first sight to the rollout) → "rollback", before anything else.
// Every decision is a row (AutopilotStore) with its reason and figures; the loop's state after a
// restart is read back from those rows. Errors (an unreadable trace, a failed build) are
// decisions too ("error"), and the cluster stays on its version. One decision at a time: the
// loop never has two versions in flight.
//
// Thread-compatible: one Autopilot per model, ticked from one thread.
#ifndef SEMMOE_PLANNER_AUTOPILOT_AUTOPILOT_H_
#define SEMMOE_PLANNER_AUTOPILOT_AUTOPILOT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "nlohmann/json.hpp"
#include "planner/autopilot/serving_board.h"
#include "planner/store/autopilot_store.h"
#include "planner/store/placement_store.h"

namespace semmoe::planner {

struct AutopilotOptions {
  std::string db;
  std::string model;
  std::vector<std::string> traces;  // Live routing traces (files or directories), re-read.
  // Re-plan when the active version's LAR on the window is this far below its planned LAR, or
  // when the traffic moved: the window's share of activations per expert is this far (total
  // variation, mean over layers) from the traffic the version was planned from.
  double drift_threshold = 0.03;
  double shift_threshold = 0.1;
  int64_t min_window_tokens = 4096;  // Fewer: too little to plan from.
  // Between rollouts, rollbacks and refused candidates.
  absl::Duration min_interval = absl::Minutes(2);
  // Expert weights a rollout may ship; negative: a quarter of the model's experts (all layers).
  int max_moved_experts = -1;
  // Within that budget, LAR a candidate may give up to move fewer experts (planner build
  // --max_lar_loss; its default, 0.01, stops a migration a point short of its candidate).
  double max_lar_loss = 0.002;
  // Times a migration whose candidate was refused is tried again, each once the window holds
  // other traffic than the refused candidate's and min_interval has passed.
  int migration_retries = 1;
  double min_gain = 0.01;         // LAR the candidate must gain on the held-back half.
  double rollback_margin = 0.01;  // LAR a rolled-out version may lose against its predecessor.
  // A drift must be seen this long before a candidate is built (a blip is not a shift; the old
  // version's serving figures on the new traffic are the served check's baseline).
  absl::Duration drift_confirm = absl::Seconds(10);
  // What the engine groups report they serve (not owned); null: rollouts are checked on the
  // window only.
  const ServingBoard* serving = nullptr;
  absl::Duration report_fresh = absl::Seconds(30);     // Older reports are of groups gone.
  absl::Duration rollout_timeout = absl::Minutes(10);  // For the groups to serve a rollout.
  int min_served_requests = 16;         // Before and after the switch, for the served check.
  double max_failed_share_gain = 0.01;  // Failed share of requests a rollout may add.
  // Served LAR a rollout may lose against its predecessor's: wider than rollback_margin, as the
  // two are measured on different requests (the replayed comparison is on the same ones).
  double served_lar_margin = 0.03;
  // How much longer a rollout's completed requests may take per output token (submission to the
  // last token over their tokens; the goodput a latency SLO counts) than before it: 0.5 = 50%
  // (wide: the time per token also follows the load, which may change across the switch).
  double served_latency_margin = 0.5;
  Clock* clock = Clock::Real();  // Not owned.
};

// The autopilot's thresholds, budgets and durations checked, each error naming its planner
// flag: finite numbers in range (a NaN --autopilot_min_gain once rolled out a candidate that lost
// LAR: every comparison with NaN is false), non-negative budgets, durations finite. Create
// calls it; AutopilotRunner::Start checks the period (kMinAutopilotPeriod).
absl::Status ValidateAutopilotOptions(const AutopilotOptions& options);

class Autopilot {
 public:
  // Opens the database; reads the last rollout or rollback back from the decisions.
  // InvalidArgument for options out of range; NotFound for an unknown model.
  static absl::StatusOr<std::unique_ptr<Autopilot>> Create(const AutopilotOptions& options);

  // One pass of the loop (above); returns the decision it recorded. A Status only when the
  // decision cannot be recorded.
  absl::StatusOr<AutopilotDecision> Tick();

 private:
  explicit Autopilot(const AutopilotOptions& options) : o_(options) {}
  // Fills the decision's action, reason and versions, and `figures`.
  absl::Status Decide(AutopilotDecision& d, nlohmann::ordered_json& figures);
  // The served check of the last rollout (o_.serving); true when it rolled back.
  absl::StatusOr<bool> CheckServing(AutopilotDecision& d, nlohmann::ordered_json& figures,
                                    int64_t active_version);
  // A candidate not rolled out ("refuse"; it stays a draft): paces the next by min_interval and
  // ends a migration, or leaves it one retry fewer (on a window other than `window`).
  absl::Status Refuse(AutopilotDecision& d, nlohmann::ordered_json& f, const std::string& window,
                      std::string reason);
  // Re-activates `previous` ("rollback") and ends both checks.
  absl::Status Rollback(AutopilotDecision& d, int64_t previous, std::string reason);

  const AutopilotOptions o_;
  std::unique_ptr<PlacementStore> store_;
  std::unique_ptr<AutopilotStore> decisions_;
  // The last rollout, rollback or refused candidate.
  absl::Time last_change_ = absl::InfinitePast();
  // After a rollout, until checked on other traffic: the version rolled out, the one before it,
  // and the window it was decided on.
  int64_t rolled_out_ = 0, previous_ = 0;
  std::string rollout_window_;
  // The last rollout, when it spent the whole expert budget: the migration goes on while it is
  // active, until a candidate gains too little. 0: none.
  int64_t migrating_ = 0;
  // A migration whose candidate was refused on `retry_window_`, to be tried again on another
  // window (`retries_left_` times more after that). 0: none.
  int64_t retry_version_ = 0;
  std::string retry_window_;
  int retries_left_ = 0;
  // The served check of the last rollout: the version and the one before; serving's counters
  // under the old version on the shifted traffic; since the groups switched.
  struct ServedProbe {
    int64_t version = 0, previous = 0;
    absl::Time at;
    ServingTotals before;
    bool switched = false;
    ServingTotals at_switch;
  };
  std::optional<ServedProbe> probe_;
  ServingTotals serving_now_;  // This tick's, summed over the model's groups.
  // When the current drift was first seen, and serving's counters then.
  std::optional<std::pair<absl::Time, ServingTotals>> drift_seen_;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_AUTOPILOT_AUTOPILOT_H_
