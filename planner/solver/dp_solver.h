// Co-scheduling for attention-DP: choose, together, a device for every request (shared by all
// layers) and a balanced expert placement per layer, maximising local expert activations.
//
// Alternating optimisation from several seeded starts:
//   expert step — given the requests' devices, each layer's placement is an exact
//     maximum-weight assignment of experts to the devices' N/G slots (Hungarian);
//   data step   — given the placement, requests move (or swap) to the device where more of their
//     activations are local, while every device's token load stays ≤ (1 + ε) · mean.
// Both steps never lower the objective, so each start converges; the best start is kept.
// Deterministic for a seed.
#ifndef SEMMOE_PLANNER_SOLVER_DP_SOLVER_H_
#define SEMMOE_PLANNER_SOLVER_DP_SOLVER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/placement/placement.h"
#include "planner/placement/topology.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

struct DpSolverOptions {
  int num_devices = 8;
  double token_balance_eps = 0.05;  // Max device token load ≤ (1 + eps) · mean.
  int starts = 4;                   // Seeded starts; the best is kept.
  int max_rounds = 30;              // Expert step + data step pairs per start.
  uint64_t seed = 0;
  // Then re-place experts for the schedule the router will actually produce: requests placed by
  // the token-affinity rule (eval/schedule.h) with C learned from this trace, alternated with
  // the exact expert step; the round whose router schedule keeps most activations local wins.
  // 0 keeps the in-sample co-schedule.
  int router_rounds = 6;
  // An extra start from this request → device assignment (e.g. derived from a baseline), run
  // before the seeded ones; empty: none. Must be balanced within the token capacity.
  std::vector<int> initial_request_device;
  // Without initial_request_device: that extra start is the schedule of the paper's algorithm
  // (paper_placement.h, as `planner build --algo paper` makes it), so that its local optimum is
  // among those this solver improves on. `planner build` and its studies set it. (Held out at
  // G = 8 it lifted DP LAR from 0.208 to 0.229; with one paper restart instead of three it did
  // not win there.)
  bool paper_start = false;
  // Optional expert compute balance (expert_balance.h): each device's expert load (activations
  // of its experts on this trace) ≤ (1 + eps) × the mean, by expert swaps that keep most
  // activations local. Negative: off. With balance_groups > 1 the cap holds for each of that
  // many request clusters (UsageClusters) too, so that a different mix of traffic stays
  // balanced.
  double expert_balance_eps = -1;
  int balance_groups = 1;
  // What an activation is worth by where it is served: credit[a · G + b] for a token on device a
  // and its expert on device b (symmetric, ≥ 0). Empty: 1 when local (a = b), else 0 — LAR. A
  // topology's (TopologyCredit) also values an activation served within the token's node, so
  // the solver keeps a token's experts on its node first (fewer rows over the slow links).
  std::vector<int64_t> credit;
};

// Credit from a topology: kCreditScale for local; for another rank kCreditScale · node_weight ·
// (MaxCost − Cost(a, b)) / (MaxCost − the cheapest link), rounded: node_weight for the cheapest
// links (another rank of the node, for NxM), 0 across the costliest (another node).
inline constexpr int64_t kCreditScale = 64;
std::vector<int64_t> TopologyCredit(const Topology& topology, double node_weight);

struct DpSolution {
  Placement placement;
  std::vector<int> request_device;
  int64_t local_activations = 0;
  double lar = 0;  // local_activations / all activations (in-sample).
  int rounds = 0;  // Of the best start.
  // With router_rounds > 0: request_device is the router's schedule and lar its in-sample LAR.
};

// InvalidArgument for G that does not divide the experts, or a request larger than a device's
// token capacity.
absl::StatusOr<DpSolution> SolveDp(const trace::TraceSet& trace, const DpSolverOptions& options);

// The data step alone for a fixed placement: from `request_device`, requests move and swap to
// where more of their true activations are local, within the token capacity, until none can.
// An offline schedule that knows every request and activation in advance — what no online
// router reaches — so that an evaluation can tell a placement's loss from the router's
// (planner eval --dp_bounds). Returns its LAR; InvalidArgument on mismatched shapes or a
// placement with replicas.
absl::StatusOr<double> OfflineScheduleLar(const trace::TraceSet& trace, const Placement& placement,
                                          std::vector<int> request_device,
                                          double token_balance_eps = 0.05);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SOLVER_DP_SOLVER_H_
