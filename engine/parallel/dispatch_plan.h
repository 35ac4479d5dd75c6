// DispatchPlan: where one rank's tokens go at one MoE layer under expert parallelism, built once
// on the host from the tokens' routing and the placement, and used by the exchange of the op-set
// forward (engine/forward/ep_exchange.h, on the CPU and the GPU), with the one rule for counting
// what crosses ranks.
//
// A token goes once to every rank that serves at least one of its top-k experts: an expert runs
// on the token's own rank if that rank holds it (home or replica), else on its home — or, with a
// per-batch holder choice (planner/placement/holder_choice.h), on the holders it picks: of this
// rank's activations of the expert, in token order, the first Shares()[0] go to the first holder,
// the next Shares()[1] to the second, and so on. Rows are
// grouped by destination in rank order, tokens ascending within a rank; each sent row carries, per
// slot, the expert id when the destination serves it, else kServedElsewhere, and the gate weight.
#ifndef SEMMOE_ENGINE_PARALLEL_DISPATCH_PLAN_H_
#define SEMMOE_ENGINE_PARALLEL_DISPATCH_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "engine/parallel/moe_layer_counters.h"
#include "planner/placement/holder_choice.h"
#include "planner/placement/placement.h"
#include "planner/placement/topology.h"

namespace semmoe::engine {

struct DispatchPlan {
  // The id of a slot another rank serves: `num_experts`, one bucket past the last expert (the
  // grouped expert runs skip it; its result is zero).
  int32_t served_elsewhere = 0;
  int top_k = 0;
  // Rows sent, by destination in rank order: the token index of each. [rows sent]
  std::vector<int32_t> send_index;
  // Rows to each rank, this rank's own included. [ranks]
  std::vector<int64_t> send_rows;
  // Per sent row and slot: the expert id, or served_elsewhere; the gate weight. [rows sent × k]
  std::vector<int32_t> send_ids;
  std::vector<float> send_weights;
  // Per token: its activations served on this rank (of top_k). [tokens]
  std::vector<int32_t> local_per_token;
  // Per token: the device holding the homes of most of its experts (lowest on ties) — what the
  // A tables of planner/affinity/transition_table.h speak of. [tokens]
  std::vector<int32_t> home_device;
  int64_t local_activations = 0, remote_activations = 0;
};

// REQUIRES: 0 <= moe_index < placement.num_layers(), 0 <= rank < placement.num_devices(),
// ids.size() == weights.size() == tokens × top_k with ids in [0, num_experts) (the router's top-k);
// `choice`, when given, made for this layer from a demand whose row `rank` is ExpertDemand(ids)
// (an activation past its shares goes to the expert's home).
DispatchPlan PlanDispatch(const planner::Placement& placement, int moe_index, int rank, int top_k,
                          absl::Span<const int32_t> ids, absl::Span<const float> weights,
                          const planner::HolderChoice* choice = nullptr);

// PlanDispatch(...).send_rows alone: the rows `rank` sends each rank (its own included), without
// building the plan — what a rank that knows a peer's routing computes instead of asking it.
// REQUIRES: as PlanDispatch's (weights aside).
std::vector<int64_t> DispatchRows(const planner::Placement& placement, int moe_index, int rank,
                                  int top_k, absl::Span<const int32_t> ids,
                                  const planner::HolderChoice* choice = nullptr);

// The byte-counting rule: payload only, to and from peers (the rank's own rows are not counted).
// A dispatched row is the hidden state (f32) plus, per slot, an i32 expert id and an f32 weight;
// a combined row is the hidden state (f32).
int64_t DispatchRowBytes(int hidden, int top_k);
int64_t CombineRowBytes(int hidden);

// Adds what the layer did to `counters`: the plan's tokens and activations, and the bytes of the
// dispatch (send_rows out, recv_rows in) and of the combine (the reverse), also per peer
// (bytes_to_peer: send_rows × dispatch row + recv_rows × combine row).
// The payload also counts as cross-node or intra-node by the peer's node under `topology` (null:
// every peer on this rank's node).
void CountExchange(const DispatchPlan& plan, absl::Span<const int64_t> recv_rows, int rank,
                   int hidden, MoeLayerCounters& counters,
                   const planner::Topology* topology = nullptr);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_DISPATCH_PLAN_H_
