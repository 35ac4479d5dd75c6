// simulate fit / simulate check: the scale model against the network lab (docs/SIMULATE.md,
// "Checked against the lab").
#ifndef SEMMOE_TOOLS_SIMULATE_LAB_H_
#define SEMMOE_TOOLS_SIMULATE_LAB_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/sim/cluster_profile.h"
#include "planner/sim/model_shape.h"

namespace semmoe::tools {

// Fits `figures` of `start` to the lab settings in `files` and writes the profile to `out`.
absl::StatusOr<int> FitLab(const planner::sim::ModelShape& shape,
                           const planner::sim::ClusterProfile& start,
                           const std::vector<std::string>& files,
                           const std::vector<std::string>& figures, const std::string& out);
// Predicts every setting of the bench.sh runs in `files` (one file per run) and prints the
// medians side by side: error of the MoE-layer time and whether the settings keep their order.
absl::StatusOr<int> CheckLab(const planner::sim::ModelShape& shape,
                             const planner::sim::ClusterProfile& profile,
                             const std::vector<std::string>& files, bool json);

}  // namespace semmoe::tools

#endif  // SEMMOE_TOOLS_SIMULATE_LAB_H_
