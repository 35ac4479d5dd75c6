// Replicated experts (docs/PLANNER.md, "Replicas", `//planner/solver:replicas`): R extra expert
// slots per device per layer, placed for traffic the profile has not shown. A replica serves the
// device's own tokens (locality) and, through the engines' per-batch holder choice
// (planner/placement/holder_choice.h), a share of every other device's activations of the expert
// (balance). Per layer, R rounds; in each, the devices, lightest first, take the expert that
// leaves the MoE time model lowest — summed over kFolds folds of the profile's requests, each
// fold's time that of its slowest device (activations served + link cost × activations
// exchanged, scaled to rows by the layer's dedup ratio) — so a copy that relieves the busiest
// device in one slice of traffic but not another scores what it is worth on unseen traffic.
// Candidates: the experts the device's tokens use most that it lacks, and the hottest per holder
// (hot and generic experts, whose load is the one to spread). Homes are unchanged.
#ifndef SEMMOE_PLANNER_SOLVER_REPLICAS_H_
#define SEMMOE_PLANNER_SOLVER_REPLICAS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "planner/eval/evaluate.h"
#include "planner/placement/placement.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

// Folds of the profile's requests (consecutive stretches in trace order): kFolds, fewer when a
// fold would hold under kRequestsPerFold requests (a fold stands for a stretch of traffic).
inline constexpr int kFolds = 4, kRequestsPerFold = 16;

// token_device[layer][token]: where each traced token runs (a DP request schedule expanded to
// tokens, or a TP schedule). InvalidArgument for R < 0, R > N − N/G, or mismatched shapes.
absl::StatusOr<Placement> AddHotReplicas(const trace::TraceSet& trace, const Placement& placement,
                                         const std::vector<std::vector<int>>& token_device,
                                         int replicas,
                                         double link_cost = EvalOptions::kLinkCost);

// A DP request → device schedule as token_device.
std::vector<std::vector<int>> TokensOfRequests(const trace::TraceSet& trace,
                                               const std::vector<int>& request_device);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SOLVER_REPLICAS_H_
