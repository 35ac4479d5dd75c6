// NodeDispatch: the dispatch of one rank's tokens at one MoE layer when the group's ranks sit on
// nodes (planner/placement/topology.h) — node-level dedup, as DeepEP's internode kernels do:
//   stage 1  a token crosses once to each remote node serving one of its experts, to that node's
//            gateway for this rank (Topology::Gateway: the node's rank at this rank's local
//            index), carrying per slot the expert id and the rank of that node serving it;
//   stage 2  inside every node, each rank sends its own tokens to the ranks of its node serving
//            them (as the flat dispatch does) and, as a gateway, fans the rows it received out to
//            the ranks of its node serving their slots;
//   combine  the reverse: stage 2's partial sums go back to their senders, a gateway adds those
//            of a forwarded row and sends one row back across the nodes.
// So a token's hidden state crosses the slow links once per remote node, not once per remote
// rank. Built on the host from the flat DispatchPlan (which holds the holder choice's serving
// ranks); engine/forward/node_exchange.h moves the rows.
#ifndef SEMMOE_ENGINE_PARALLEL_NODE_DISPATCH_H_
#define SEMMOE_ENGINE_PARALLEL_NODE_DISPATCH_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/parallel/dispatch_plan.h"
#include "planner/placement/topology.h"

namespace semmoe::engine {

struct NodeDispatch {
  int top_k = 0;
  int32_t served_elsewhere = 0;
  // Stage 1: rows to the gateways of other nodes, by gateway rank, tokens ascending within one.
  // Per slot: the expert id when a rank of the gateway's node serves it (else served_elsewhere),
  // that rank (else -1), the gate weight.
  std::vector<int32_t> cross_index;  // [cross rows] token index
  std::vector<int64_t> cross_rows;   // [ranks]
  std::vector<int32_t> cross_ids, cross_dest;  // [cross rows × k]
  std::vector<float> cross_weights;            // [cross rows × k]
  // This rank's own tokens to the ranks of its node (itself included): the DispatchPlan's rows.
  std::vector<int32_t> direct_index;  // [direct rows] token index
  std::vector<int64_t> direct_rows;   // [ranks]; 0 for ranks of other nodes
  std::vector<int32_t> direct_ids;    // [direct rows × k]
  std::vector<float> direct_weights;  // [direct rows × k]
  // Rows to each node (its tokens with an expert served there, once each; 0 for its own node).
  std::vector<int64_t> node_rows;  // [nodes]
};

// REQUIRES: plan from PlanDispatch for `rank` of a placement with topology.num_ranks() devices.
NodeDispatch PlanNodeDispatch(const DispatchPlan& plan, const planner::Topology& topology,
                              int rank);
// PlanNodeDispatch(...).node_rows from DispatchRows-like per-token serving ranks, without the
// plan: rows `rank` sends each node. `served_by` [tokens × k]: the rank serving each slot.
std::vector<int64_t> NodeRows(absl::Span<const int32_t> served_by, int top_k,
                              const planner::Topology& topology, int rank);

// The two stages' row counts, from what every rank sends: rank_rows[o][d] (o's tokens with an
// expert served by d: DispatchPlan::send_rows) and node_rows[o][n] (NodeDispatch::node_rows).
struct NodeExchangeSizes {
  std::vector<int64_t> cross_send, cross_recv;    // [ranks] stage 1, this rank's
  std::vector<int64_t> local_send, local_recv;    // [ranks] stage 2 (own node only; self 0)
  int64_t self_rows = 0;  // Stage-2 rows this rank keeps: its own direct rows and forwarded ones.
  // Of local_send[d]: the rows forwarded (the rest are this rank's own tokens), and for itself.
  std::vector<int64_t> forwarded_send;  // [ranks], self included
};
// InvalidArgument on counts of the wrong shape or negative.
absl::StatusOr<NodeExchangeSizes> SizeNodeExchange(
    const std::vector<std::vector<int64_t>>& rank_rows,
    const std::vector<std::vector<int64_t>>& node_rows, const planner::Topology& topology,
    int rank);

// Stage 2 at a gateway: of the rows it received in stage 1 (ids, dest, weights [rows × k], the
// origins' rows in rank order), for each rank of its node in rank order (itself included), the
// rows with a slot that rank serves and their ids for it (served_elsewhere for the others).
struct FanOut {
  std::vector<int32_t> index;    // [rows] received row
  std::vector<int64_t> rows;     // [ranks]
  std::vector<int32_t> ids;      // [rows × k]
  std::vector<float> weights;    // [rows × k]
};
// InternalError naming the row when a slot names a rank outside this node or a bad expert.
absl::StatusOr<FanOut> PlanFanOut(absl::Span<const int32_t> ids, absl::Span<const int32_t> dest,
                                  absl::Span<const float> weights, int top_k, int num_experts,
                                  const planner::Topology& topology, int rank);

// A stage-1 row: the hidden state (f32) and, per slot, an i32 expert id, an i32 serving rank and
// an f32 weight.
int64_t CrossRowBytes(int hidden, int top_k);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_NODE_DISPATCH_H_
