// Evaluation of a placement on a routing trace: how many expert activations stay local (LAR),
// what the expert-parallel all-to-all moves, how balanced devices are — and the upper bounds no
// data scheduling can beat, so every result shows its gap.
//
// Data schedules: in attention-DP a request runs on one device for every layer (request →
// device); in attention-TP every token may sit on any device at each layer (token, layer →
// device). An activation is local when the chosen expert lives on the token's device.
#ifndef SEMMOE_PLANNER_EVAL_EVALUATE_H_
#define SEMMOE_PLANNER_EVAL_EVALUATE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/placement/placement.h"
#include "planner/placement/topology.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

struct Metrics {
  double lar = 0;  // Local activations / all activations.
  std::vector<double> lar_per_layer;
  // Bytes moved per token by dispatch + combine over all MoE layers: a token goes once to each
  // remote device holding at least one of its experts (per-rank dedup) and comes back once.
  double a2a_bytes_per_token = 0;
  // Max over layers of (activations on the busiest device / mean per device), and per layer;
  // with replicas, under the per-batch holder choice (EvalOptions::holder_choice_batch_tokens).
  double expert_load_imbalance = 0;
  std::vector<double> expert_load_imbalance_per_layer;
  // Max over layers of (tokens on the busiest device / mean per device).
  double token_load_imbalance = 0;
  // The MoE time model, per token: Σ over layers of max over devices of (expert rows computed
  // there + link_cost × rows it exchanges: copies it sends to remote experts plus copies it
  // receives, each there and back). Expert rows alone make it the expert load; exchanged rows
  // alone, the all-to-all. In units of one expert row; compare placements by their ratio.
  double moe_time_per_token = 0;

  // Under a topology (EvalOptions::topology, else the placement's own; all 0 without one):
  bool has_topology = false;
  // Activations served on the token's node (its own rank or another of its node) / all.
  double node_lar = 0;
  // Bytes per token crossing nodes, dispatch + combine over all MoE layers, with node-level
  // dedup: a token crosses once to each remote node serving one of its experts (entering at
  // Topology::Gateway) and is fanned out there.
  double cross_node_bytes_per_token = 0;
  double cross_node_rows_per_token = 0;  // The same in token rows (without a hidden size).
  // The same without node dedup (once per remote *rank*, as the per-rank dispatch sends).
  double cross_node_bytes_per_token_rank_dedup = 0;
  // Bytes per token between ranks of one node with node dedup: copies to the other ranks of the
  // token's node, and the fan-out from a remote node's gateway to its other serving ranks.
  double intra_node_bytes_per_token = 0;
};

struct EvalOptions {
  int64_t hidden_size = 0;  // Values per token row; 0 leaves a2a_bytes_per_token at 0.
  int bytes_per_value = 2;  // bf16 activations on the wire.
  // The time of one exchanged row (dispatch + combine) in expert rows, for moe_time_per_token;
  // kLinkCost is calibrated from bench_ep (docs/PLANNER.md, "Balance").
  double link_cost = kLinkCost;
  static constexpr double kLinkCost = 2.5;
  // With replicas: the engine's per-batch holder choice (planner/placement/holder_choice.h) over
  // batches of this many consecutive tokens of the trace (every device's tokens in the window
  // are its batch); an expert a device lacks then runs on the holder the choice gives, not its
  // home. 0: always the home.
  int64_t holder_choice_batch_tokens = 2048;
  // The topology to report node figures under (for a flat placement); null: the placement's own
  // topology, if any. Not owned; must have the placement's number of devices.
  const Topology* topology = nullptr;
};

// REQUIRES nothing; InvalidArgument when the placement does not match the trace's layers and
// experts or an assignment is out of range / of the wrong size.
absl::StatusOr<Metrics> EvaluateDp(const trace::TraceSet& trace, const Placement& placement,
                                   const std::vector<int>& request_device,
                                   const EvalOptions& options = {});
// token_device[l][t]: the device of token t at MoE layer l.
absl::StatusOr<Metrics> EvaluateTp(const trace::TraceSet& trace, const Placement& placement,
                                   const std::vector<std::vector<int>>& token_device,
                                   const EvalOptions& options = {});

// Blind data schedules: requests round-robin over devices (DP); each batch of `batch_tokens`
// consecutive tokens split into equal contiguous chunks, the same at every layer (TP).
std::vector<int> RoundRobinRequests(const trace::TraceSet& trace, int num_devices);
std::vector<std::vector<int>> ContiguousChunks(const trace::TraceSet& trace, int num_devices,
                                               int batch_tokens);

// Upper bound on DP LAR for any placement without replicas and any request → device schedule:
// each request keeps, per layer, the N/G experts it uses most on its own device.
double DpRequestBound(const trace::TraceSet& trace, int num_devices);
// Upper bound on TP LAR for this placement: each token, at each layer, on the device holding
// most of its chosen experts (ignores balance).
double TpTokenOracle(const trace::TraceSet& trace, const Placement& placement);

// Upper bound on TP LAR for any schedule that, like the shuffled reduce-scatter, gives no device
// more than its capacity of each batch of `batch_tokens` consecutive tokens (ChunkCapacities:
// the equal chunk, or ⌊(1 + slack) · batch / G⌋), whatever it knows. Per batch and layer the
// best such split is a transportation problem; by LP duality Σ_t max_d (w[t][d] − p_d) +
// Σ_d capacity_d · p_d bounds it for any prices p ≥ 0 (w: the token's experts held by d), so
// the prices found by 150 projected subgradient steps give a valid bound (≤ TpTokenOracle,
// which is the bound at p = 0).
double TpBalancedBound(const trace::TraceSet& trace, const Placement& placement, int batch_tokens,
                       double slack = 0);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_EVAL_EVALUATE_H_
