// What the console's TUI shows, apart from the terminal: the data it polls (a Snapshot) and the
// text it draws from it, so the screens are testable without ncurses. tui.cc draws these lines.
#ifndef SEMMOE_CONSOLE_TUI_MODEL_H_
#define SEMMOE_CONSOLE_TUI_MODEL_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "planner/proto/planner.pb.h"
#include "router/proto/router.pb.h"

namespace semmoe::console {

struct Snapshot {
  std::vector<planner::rpc::PlacementVersion> versions;
  std::vector<planner::rpc::Experiment> experiments;
  // The planner's autopilot decisions for the model, newest first (empty: none, or it is off).
  std::vector<planner::rpc::AutopilotDecision> autopilot;
  router::rpc::RouterStats router;
  std::vector<std::pair<int, double>> layer_lar;  // (MoE layer, LAR over every rank).
  // Per MoE layer, the all-to-all payload every rank sent across nodes and inside its node.
  struct NodeBytes {
    int layer = 0;
    int64_t cross = 0, intra = 0;
  };
  std::vector<NodeBytes> layer_node_bytes;
  std::string topology;  // The engines' ("" : one node), with " (node dedup)" when on.
  bool planner_ok = false, router_ok = false;
  std::string planner_error, router_error;
};

enum class Pane { kPlacements, kExperiments, kCluster };

// A/B verdict from two arms' recorded metrics: a two-proportion z-test on the share of requests
// within the SLO (goodput / throughput × completed). "" when either arm has no metrics; "no
// verdict: ..." when an arm was not routed as planned (its metrics do not measure its version).
std::string Verdict(const planner::rpc::Experiment& e);

// Per arm whose MoE layer was measured more than 2% slower than the vanilla arm's
// (ExperimentArm.moe_vs_vanilla_arm, from the planner): "!! arm B's MoE layer was measured
// 1.104x the vanilla arm A's: promote refuses it without --force".
std::vector<std::string> MeasuredSlowerLines(const planner::rpc::Experiment& e);

// Why an arm's recorded metrics do not measure its version (the router could not place its
// requests with the version's tables: the metrics' "tables_error"), or "".
std::string NotRoutedAsPlanned(const planner::rpc::ExperimentArm& arm);

// The warnings above every pane: a service out of reach, an engine group placing requests
// without the tables it should.
std::vector<std::string> Banners(const Snapshot& s, const std::string& planner,
                                 const std::string& router);

// Per group whose latest rollout failed (or whose rank 0 lost the planner's watch): a
// "!! rollout: …" line with the reason. Part of Banners; `console cluster status` prints them too.
std::vector<std::string> RolloutBanners(const router::rpc::RouterStats& stats);
// Per rank the router cannot use: "!! rank 1 (HOST:PORT) down for 3.2 s: <why>" (its last stats
// poll: no answer in time — stalled —, unreachable — dead —, ...). Part of Banners;
// `console cluster status` prints them too.
std::vector<std::string> DownRankBanners(const router::rpc::RouterStats& stats);

// A rank's placement for the cluster pane: "v2", during a rollout "v2->v3 4/10" (experts loaded
// of those to load) or "v2->v3 staged", then " e1" with the switches so far (the epoch).
std::string PlacementCell(const router::rpc::RankStats& rank);

// "▁▂▃▅▇"-style sparkline of the values (scaled to their max), one character each; with
// `unicode` false, ASCII " .:-=+*#".
std::string Sparkline(const std::deque<double>& values, bool unicode = true);

// A horizontal bar of `width` cells filled in proportion to `fraction` in [0, 1].
std::string Bar(double fraction, int width);

// The lines of a pane for a terminal `width` wide; `selected` indexes the pane's list.
std::vector<std::string> PlacementLines(const Snapshot& s, int selected, int width);
std::vector<std::string> ExperimentLines(const Snapshot& s, int selected, int width);
std::vector<std::string> ClusterLines(const Snapshot& s, const std::deque<double>& throughput,
                                      int width, bool unicode = true);

// A version's details (Enter in the placements pane).
std::vector<std::string> VersionDetails(const planner::rpc::PlacementVersion& v);

// The keys, for `?`.
std::vector<std::string> HelpLines();

}  // namespace semmoe::console

#endif  // SEMMOE_CONSOLE_TUI_MODEL_H_
