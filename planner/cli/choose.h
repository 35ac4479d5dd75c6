// The prediction against vanilla as the planner's commands use it (docs/PLANNER.md, "Predicted
// against vanilla" and "Chosen by predicted time"): `planner predict` and `planner build
// --cluster` predict a stored version on a cluster with the scale model (planner/sim/
// prediction.h), store it where activation's guard reads it, and print it; `planner build
// --cluster` with a semantic algorithm builds several candidates and keeps the one predicted
// fastest.
#ifndef SEMMOE_PLANNER_CLI_CHOOSE_H_
#define SEMMOE_PLANNER_CLI_CHOOSE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "planner/cli/commands.h"
#include "planner/sim/model_shape.h"
#include "planner/sim/prediction.h"

namespace semmoe::planner::cli {

struct PredictOptions {
  std::string cluster;              // A profile: lab, h100, h200 or a file.
  std::string topology;             // "NxM"; empty: the version's, else the profile's nodes.
  std::vector<std::string> traces;  // What it is predicted on.
  sim::ModelShape shape;
};

// Predicts `version`, stores the prediction (PlacementStore::SetPrediction), prints one line and,
// where activation's guard would refuse it, a WARNING line. Returns the stored prediction.
absl::StatusOr<nlohmann::ordered_json> PredictVersion(const std::string& db, int64_t version,
                                                      const PredictOptions& options,
                                                      std::ostream& out,
                                                      sim::VanillaSweeps* vanilla = nullptr);

// One candidate of a choice: what it varies and its prediction.
struct Candidate {
  std::string label;  // e.g. "node+r1+eps0.1"
  BuildOptions build;
  int64_t version = 0;
  nlohmann::ordered_json prediction;
};

// `planner build --cluster` with a semantic algorithm: the build as given and its variations,
// axis by axis — where (flat; node-aware: the ranks exchanging most on one node; the node
// credit), then replicas (none; --replicas, or 1), then under DP the expert-load cap (as given;
// 0.05, 0.1, 0.2) — each stored as a draft named "<name>:<label>" and predicted on the same
// cluster, topology and traces; on each axis the candidate predicted fastest is kept (a
// candidate activation's guard would refuse never beats one it passes), and the next axis varies
// it. EPLB over the same devices (hierarchical on the topology, with as many replicas) is built
// and predicted beside. Prints one line per candidate, then the choice; the chosen version's
// stored prediction gains "candidates" and "eplb". Returns the chosen version.
// Without nodes (one node) the first axis is the build as given alone.
absl::StatusOr<int64_t> BuildChosenByTime(const BuildOptions& build, const PredictOptions& predict,
                                          std::ostream& out);

}  // namespace semmoe::planner::cli

#endif  // SEMMOE_PLANNER_CLI_CHOOSE_H_
