// Topology: which ranks of an expert-parallel group share a node, and what a row costs between
// two ranks. Real clusters are nodes of 4–8 GPUs on fast links (NVLink) joined by slower ones
// (one NIC per GPU); the bytes that cross nodes are what costs.
//
// Two ways to describe one:
//   "NxM"   N nodes of M ranks each: rank r is on node ⌊r / M⌋; a row costs 0 on its own rank,
//           kIntraNodeCost to another rank of its node, kCrossNodeCost to another node.
//   a file  {"format": "semmoe-topology", "cost": [[c(a, b)] per rank a], "node_of": [node per
//           rank]}: any rank-cost matrix (square, symmetric, finite, ≥ 0, 0 on the diagonal).
//           "node_of" is optional: without it, ranks share a node when their cost is the
//           matrix's smallest off-diagonal one (which must then group the ranks into classes).
//
// A placement built for a topology records it (placement.h); a group serving it must run the
// same topology (CheckServes). A placement without one (flat) serves on any topology.
#ifndef SEMMOE_PLANNER_PLACEMENT_TOPOLOGY_H_
#define SEMMOE_PLANNER_PLACEMENT_TOPOLOGY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmoe::planner {

class Topology {
 public:
  // Default link costs of "NxM", relative to one row within a node: NVLink-class links inside a
  // node (~450 GB/s per H100/H200) against one 50 GB/s (400 Gb/s) NIC per GPU between nodes is
  // a ratio of ~9; 8 keeps it a round power of two. Only ratios matter to the planner.
  static constexpr double kIntraNodeCost = 1;
  static constexpr double kCrossNodeCost = 8;
  // The most ranks a topology may describe (a cost matrix of this size is 64 MiB of doubles).
  static constexpr int kMaxRanks = 4096;

  // N nodes × M ranks per node. InvalidArgument unless both are ≥ 1 and N·M ≤ kMaxRanks.
  static absl::StatusOr<Topology> Nodes(int num_nodes, int ranks_per_node);
  // One node holding every rank: what a group is when nobody says otherwise.
  static absl::StatusOr<Topology> Flat(int num_ranks) { return Nodes(1, num_ranks); }
  // "NxM" (e.g. "2x4"). InvalidArgument naming the text otherwise.
  static absl::StatusOr<Topology> Parse(absl::string_view spec);
  // A rank-cost matrix; node_of empty derives the nodes (see above). InvalidArgument naming the
  // first fault: not square, not symmetric, negative or non-finite, non-zero diagonal, a node_of
  // of the wrong length or with a gap in its node ids, ranks of one node costing more to each
  // other than to another node.
  static absl::StatusOr<Topology> FromCostMatrix(std::vector<std::vector<double>> cost,
                                                 std::vector<int> node_of = {});
  // The JSON object ToJson writes, or a topology file's text. InvalidArgument naming the fault.
  static absl::StatusOr<Topology> FromJson(absl::string_view json);
  // A command-line value: "NxM", or else the path of a topology file (relative to where the
  // user ran the command: common/file.h UserPath). InvalidArgument naming the value when it is
  // neither.
  static absl::StatusOr<Topology> FromFlag(absl::string_view value);
  // Whether a command-line value is of the "NxM" form (else FromFlag reads it as a file).
  static bool IsNodesSpec(absl::string_view value);

  // {"format": "semmoe-topology", "nodes": N, "ranks_per_node": M} for NxM; with "cost" and
  // "node_of" for a cost matrix.
  std::string ToJson() const;
  // "2x4", or "8 ranks in 2 nodes (cost matrix)": for messages and reports.
  std::string Describe() const;

  int num_ranks() const { return static_cast<int>(node_of_.size()); }
  int num_nodes() const { return num_nodes_; }
  // Whether this is N nodes of M ranks with the default costs (Parse's form).
  bool uniform() const { return uniform_; }
  // REQUIRES: 0 <= rank < num_ranks().
  int NodeOf(int rank) const { return node_of_[rank]; }
  bool SameNode(int a, int b) const { return node_of_[a] == node_of_[b]; }
  double Cost(int a, int b) const { return cost_[static_cast<size_t>(a) * num_ranks() + b]; }
  // The ranks on `node`, ascending.
  const std::vector<int>& RanksOn(int node) const { return ranks_on_[node]; }
  // The rank's position among its node's ranks.
  int LocalIndex(int rank) const { return local_index_[rank]; }
  // Where a row from `from_rank` enters `node` when it crosses nodes once and is fanned out
  // inside (node-level dedup): the node's rank at from_rank's local index (modulo the node's
  // size), as DeepEP's internode kernels pair GPUs of the same index ("rails"). `from_rank`
  // itself when `node` is its own.
  int Gateway(int from_rank, int node) const {
    const std::vector<int>& ranks = ranks_on_[node];
    return node == node_of_[from_rank]
               ? from_rank
               : ranks[local_index_[from_rank] % static_cast<int>(ranks.size())];
  }
  // The largest cost between two ranks (0 for a single rank).
  double MaxCost() const { return max_cost_; }

  // OK when a placement built for this topology may serve on `group` (the same nodes and costs);
  // else FailedPrecondition naming both.
  absl::Status CheckServes(const Topology& group) const;
  bool operator==(const Topology& other) const;
  bool operator!=(const Topology& other) const { return !(*this == other); }

 private:
  Topology() = default;
  absl::Status Init();

  std::vector<int> node_of_;
  std::vector<double> cost_;  // [a · ranks + b]
  int num_nodes_ = 0;
  bool uniform_ = false;
  double max_cost_ = 0;
  std::vector<std::vector<int>> ranks_on_;
  std::vector<int> local_index_;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_PLACEMENT_TOPOLOGY_H_
