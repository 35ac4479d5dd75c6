// An upper bound on attention-DP LAR that, unlike the per-request bound (evaluate.h
// DpRequestBound), knows that a device's N/G experts are shared by all the requests it serves,
// and that a device serves at most its token capacity.
//
// For any schedule dev(r) with every device's tokens ≤ capacity, and any balanced placement
// home(l, e) (N/G experts per device and layer), split each activation count w[r][l][e] into
// (w − λ) + λ for any real λ:
//   local = Σ_{r,l} Σ_{e: home(l,e) = dev(r)} (w − λ)  +  Σ_{l,e} Σ_{r: dev(r) = home(l,e)} λ
//         ≤ Σ_{r,l} top_{N/G}(w[r][l] − λ[r][l])     +  Σ_{l,e} knapsack_capacity(λ[·][l][e])
// The first term is the per-request bound of w − λ (a request's device holds exactly N/G experts
// of each layer); the second lets every expert pick the best requests its device could hold (the
// fractional knapsack over request token counts, itself an upper bound). At λ = 0 it is the
// per-request bound; subgradient steps on λ (a Lagrangian decomposition) lower it.
// Every λ gives a valid bound, so stopping early is safe; the smallest value seen is returned.
#ifndef SEMMOE_PLANNER_EVAL_DP_BOUND_H_
#define SEMMOE_PLANNER_EVAL_DP_BOUND_H_

#include "absl/status/statusor.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

struct DpBoundOptions {
  int num_devices = 8;
  double token_balance_eps = 0.05;  // Device capacity ⌊(1 + eps) · tokens / G⌋.
  int iterations = 300;
  // A known lower bound on the optimum (e.g. a solver's in-sample LAR), the target of the
  // Polyak step; 0: half the current bound.
  double lower = 0;
};

struct DpBound {
  double per_request = 0;  // λ = 0: DpRequestBound.
  double capacity = 0;     // The best bound found (≤ per_request).
  int iterations = 0;
};

// InvalidArgument for G that does not divide the experts or an empty trace.
absl::StatusOr<DpBound> DpCapacityBound(const trace::TraceSet& trace,
                                        const DpBoundOptions& options);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_EVAL_DP_BOUND_H_
