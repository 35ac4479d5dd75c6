// Replicated experts (docs/PLANNER.md, "Replicas", `//planner/solver:replicas`): R extra expert
// slots per device per layer, placed to balance traffic the profile has not shown. A replica
// serves its device's own tokens (locality) and, through the engines' per-batch holder choice
// (planner/placement/holder_choice.h), a share of every other device's activations of the expert
// (balance). The profile's requests are split into kTrafficGroups groups of similar expert use
// (UsageClusters); a placement balanced for each group separately stays balanced under any mix
// of them (the busiest device of a mix is at most the mix of each group's busiest), whereas one
// balanced for the profile's own mix drifts when the served mix differs. Per layer, R rounds; in
// each, the devices, lightest first, take the expert that leaves Σ over the groups and the
// profile's own mix of (busiest device's load / mean) lowest under the holder choice, ties to the
// one their tokens use most.
// Candidates: the experts the device's tokens use most that it lacks, and those with the most
// activations per holder (hot and generic experts: the load to spread). Homes are unchanged.
#ifndef SEMMOE_PLANNER_SOLVER_REPLICAS_H_
#define SEMMOE_PLANNER_SOLVER_REPLICAS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "planner/eval/evaluate.h"
#include "planner/placement/placement.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

// Traffic groups the replicas balance for (UsageClusters of the profile's requests).
inline constexpr int kTrafficGroups = 4;

// token_device[layer][token]: where each traced token runs (a DP request schedule expanded to
// tokens, or a TP schedule). InvalidArgument for R < 0, R > N − N/G, or mismatched shapes.
absl::StatusOr<Placement> AddHotReplicas(const trace::TraceSet& trace, const Placement& placement,
                                         const std::vector<std::vector<int>>& token_device,
                                         int replicas);

// A DP request → device schedule as token_device.
std::vector<std::vector<int>> TokensOfRequests(const trace::TraceSet& trace,
                                               const std::vector<int>& request_device);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SOLVER_REPLICAS_H_
