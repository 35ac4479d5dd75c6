// A placement version's predicted MoE layer and max rate in SLO against vanilla's on a cluster
// (planner build --cluster, planner predict; docs/SIMULATE.md "Predicted against vanilla"): the
// scale model's sweep of the version (DP: routed by the router's time rule when it has tables,
// else round-robin; TP: its token schedule) and of vanilla over the same devices (round-robin),
// both with node dedup where there are several nodes, on the traces given, at G × 0.5 … 2.5
// requests/s under DP (2 … 12 under TP), 128 output tokens. What activation's guard reads
// (PlacementStore::CheckPredictedNotSlower).
#ifndef SEMMOE_PLANNER_SIM_PREDICTION_H_
#define SEMMOE_PLANNER_SIM_PREDICTION_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "planner/sim/model_shape.h"
#include "planner/sim/scenario.h"

namespace semmoe::planner::sim {

struct PredictionSpec {
  std::string db;
  int64_t version = 0;
  std::vector<std::string> traces;  // What it is predicted on (a build's own traces: in-sample).
  std::string cluster;              // A profile: lab, h100, h200 or a file.
  std::string topology;             // "NxM"; empty: the version's, else the profile's nodes.
  int output_tokens = 128;
  double point_s = 20;  // Seconds of arrivals per sweep point.
};

// {"cluster", "topology", "router", "predicted_moe_layer_ms", "vanilla_moe_layer_ms",
//  "predicted_vs_vanilla", "predicted_max_rate_rps", "vanilla_max_rate_rps",
//  "predicted_max_rate_vs_vanilla" (0 when vanilla's is 0), "node_dedup", "key"} — `key`
// (cluster and topology, e.g. "h200 2x8") is what the store files it under. Errors name the
// input (a profile, version, trace or topology that does not fit).
// `vanilla` (may be null) keeps vanilla's sweeps between calls: predictions of several versions
// on the same cluster, topology, mode and traces (planner build choosing among its candidates)
// sweep vanilla once.
using VanillaSweeps = std::map<std::string, SweepResult>;
absl::StatusOr<nlohmann::ordered_json> PredictAgainstVanilla(const PredictionSpec& spec,
                                                             const ModelShape& shape,
                                                             VanillaSweeps* vanilla = nullptr);

}  // namespace semmoe::planner::sim

#endif  // SEMMOE_PLANNER_SIM_PREDICTION_H_
