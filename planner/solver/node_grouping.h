// Which ranks share a node: a topology-aware placement puts the ranks that exchange most on one
// node, so that fewer rows cross the slow links between nodes.
//
// Device labels are arbitrary to every solver (relabelling a placement's devices — one
// permutation for all layers, so a DP request keeps its rank — changes no LAR, no load and no
// byte count), but a topology gives ranks places: rank r sits on node NodeOf(r). Given the rank
// → rank traffic of a placement's own schedule, NodeGrouping finds the relabelling that
// minimises the cost-weighted traffic Σ traffic(a, b) · Cost(π(a), π(b)) (a quadratic
// assignment problem: pairwise swaps of positions from the identity and from seeded starts,
// until no swap gains). With N nodes × M ranks that is: cross-node rows as few as possible.
#ifndef SEMMOE_PLANNER_SOLVER_NODE_GROUPING_H_
#define SEMMOE_PLANNER_SOLVER_NODE_GROUPING_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/placement/placement.h"
#include "planner/placement/topology.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

// traffic[a · G + b]: rows rank a sends to rank b (a ≠ b) when each traced token, at each MoE
// layer, runs on token_device[layer][token] and goes once to every other rank serving one of its
// experts (the placement's Serving rule). InvalidArgument on mismatched shapes.
absl::StatusOr<std::vector<int64_t>> RankTraffic(const trace::TraceSet& trace,
                                                 const Placement& placement,
                                                 const std::vector<std::vector<int>>& token_device);

// Σ traffic(a, b) · Cost(relabel[a], relabel[b]) over a ≠ b.
double PlacedTrafficCost(const std::vector<int64_t>& traffic, const Topology& topology,
                         const std::vector<int>& relabel);

struct NodeGroupingOptions {
  int seeded_starts = 8;  // Besides the identity.
  uint64_t seed = 0;
};

// relabel[c]: the rank device c becomes. Never costlier than the identity. InvalidArgument when
// traffic is not G × G for the topology's G ranks.
absl::StatusOr<std::vector<int>> NodeGrouping(const std::vector<int64_t>& traffic,
                                              const Topology& topology,
                                              const NodeGroupingOptions& options = {});

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SOLVER_NODE_GROUPING_H_
