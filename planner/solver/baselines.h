// Baseline placements the semantic solver is compared with (docs/PLANNER.md):
//   eplb  — balance expert load: per layer, experts by decreasing activation count, each to
//           the least-loaded device with a free slot (greedy packing, as DeepSeek's EPLB without
//           replicas);
//   coact — co-activation partitioning (MoETuner-like): per layer, experts often chosen by the
//           same token share a device: greedy growth of N/G-expert groups around the busiest
//           experts, then improving pairwise swaps.
#ifndef SEMMOE_PLANNER_SOLVER_BASELINES_H_
#define SEMMOE_PLANNER_SOLVER_BASELINES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/placement/placement.h"
#include "planner/placement/topology.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

// One layer's activation counts: pairs[e · N + f] = tokens that chose both e and f (e ≠ f),
// load[e] = tokens that chose e. Shared by coact and the paper's algorithm.
struct Coactivation {
  std::vector<int64_t> pairs, load;
};
Coactivation CountCoactivation(const trace::TraceSet& trace, int layer);

absl::StatusOr<Placement> EplbPlacement(const trace::TraceSet& trace, int num_devices);
// EPLB's hierarchical mode (`planner build --algo eplb --topology ...`): per layer, experts packed
// onto nodes by load (greedy, as above, a node's slots = its ranks × N/G), then each node's
// experts onto its ranks. DeepSeek's EPLB packs *expert groups* onto nodes (group-limited
// routing keeps a token's experts in few groups); our traces carry no groups, so every expert is
// its own group and the mode balances load per node, then per rank — locality-blind like EPLB.
absl::StatusOr<Placement> EplbHierarchicalPlacement(const trace::TraceSet& trace,
                                                    const Topology& topology);
// EPLB's replicas (DeepSeek's EPLB copies its heaviest experts): `placement` plus R copies per
// device and layer. Per layer, R·G times, the expert with the most activations per copy (each
// expert's activations split evenly over its copies) gets one more on the least-loaded device
// that lacks it and has a slot left (ties: lower expert, then lower device). Locality-blind.
// InvalidArgument for R < 0, R > N − N/G, or a placement that does not match the trace.
absl::StatusOr<Placement> EplbReplicas(const trace::TraceSet& trace, const Placement& placement,
                                       int replicas);
absl::StatusOr<Placement> CoactPlacement(const trace::TraceSet& trace, int num_devices);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SOLVER_BASELINES_H_
