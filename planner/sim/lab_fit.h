// The scale model against the network lab (docs/SIMULATE.md, "Checked against the lab"): a lab
// setting as tools/netlab/bench.sh records it (its JSON: what ran — placement, router policy,
// attention mode, hosts, link rate, sweep, work directory — and what the ranks measured), the
// scenario that replays it, and the fit of a profile's figures to some settings' measurements.
#ifndef SEMMOE_PLANNER_SIM_LAB_FIT_H_
#define SEMMOE_PLANNER_SIM_LAB_FIT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/sim/cluster_profile.h"
#include "planner/sim/scenario.h"

namespace semmoe::planner::sim {

struct LabSetting {
  std::string name, file;
  int ranks = 0, ranks_per_host = 0;
  double link_mbit = 0;   // 0: unshaped.
  std::string placement;  // "vanilla" or a version number in work_dir/planner.db.
  std::string router_policy, attn, netlab_flags, work_dir;
  std::vector<double> rates;
  double point_s = 0;
  // Measured, per MoE-layer call of the slowest rank (ms) and per layer (attention).
  double moe_layer_ms = 0, wait_ms = 0, dispatch_ms = 0, experts_ms = 0, combine_ms = 0;
  double attention_ms = 0;
  double srs_ms = 0, sag_ms = 0;  // Per layer: Attention-TP's reduce-scatter and all-gather.
  double max_rate_in_slo = 0;
  double tpot_p50_ms = 0;  // At max_rate_in_slo (0: not recorded).
  // The router's, planner's and loadgen's CPU over the sweep per request sent (bench.sh's
  // host_cpu_per_request_s; < 0: not recorded, runs from before 2026-12-06).
  double host_cpu_per_request_s = -1;
};

// One setting's JSON object (`file` names it in errors). InvalidArgument naming a missing or
// mistyped field — lab runs from before bench.sh recorded what ran lack "placement".
absl::StatusOr<LabSetting> ParseLabSetting(const std::string& json, const std::string& file);
// A bench.sh --json OUT file (an object keyed by setting) or one setting's JSON.
absl::StatusOr<std::vector<LabSetting>> LoadLabSettings(const std::string& path);

// The scenario a setting ran: its work directory's planner.db and served-prompt trace (s.trace),
// DP under the router's round-robin, least-loaded or semantic rule (affinity, online),
// TP, its hosts, node dedup when netlab ran with --node_topology.
ScenarioSpec SpecOf(const LabSetting& setting);
// The sweep's point at `rate` (the first point when none is).
const SweepPoint& PointAt(const SweepResult& result, double rate);
// The profile for a setting: `profile` with the setting's link (inter_bw; unshaped: intra_bw),
// ranks per host and, where the run measured it, host CPU per request.
ClusterProfile ProfileFor(const ClusterProfile& profile, const LabSetting& setting);
// What a setting's sweep predicts (the loadgen's 32 output tokens).
absl::StatusOr<SweepResult> Predict(const Scenario& scenario, const ClusterProfile& profile,
                                    const LabSetting& setting);

// Fits `figures` of `start` to the settings' measured wait, exchange (dispatch + experts +
// combine), experts and attention times per call and p50 TPOT at the highest rate in SLO
// (least squares of log ratios, coordinate search), each fitted figure's source naming the
// files it came from.
absl::StatusOr<ClusterProfile> FitProfile(const std::vector<Scenario>& scenarios,
                                          const std::vector<LabSetting>& settings,
                                          ClusterProfile start,
                                          const std::vector<std::string>& figures);

}  // namespace semmoe::planner::sim

#endif  // SEMMOE_PLANNER_SIM_LAB_FIT_H_
