// Replicated hot experts (docs/PLANNER.md, `//planner/solver:replicas`): R extra expert slots per
// device per layer, chosen by the MoE time model of the balance (eval/evaluate.h
// moe_time_per_token): a replica makes the activations of the device's tokens local, which
// saves exchanged rows and takes expert rows off the busy home. Per layer, R rounds; in each,
// every device takes the candidate (of the 8 experts its tokens use most remotely) that leaves
// the layer's modelled time lowest, ties to the one saving most rows. Homes are unchanged.
// Reported separately from replica-free placements (their bounds do not apply).
#ifndef SEMMOE_PLANNER_SOLVER_REPLICAS_H_
#define SEMMOE_PLANNER_SOLVER_REPLICAS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "planner/eval/evaluate.h"
#include "planner/placement/placement.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

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
