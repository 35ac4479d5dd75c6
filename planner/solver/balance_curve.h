// LAR against expert-load balance for attention-DP, and the point a time model picks.
//
// One co-schedule (the DP solver's, balance off) is balanced at each cap of a grid
// (expert_balance.h); each point is scored under the router's rule with the profile's token
// affinity: LAR, expert-load imbalance and the MoE time model (evaluate.h moe_time_per_token:
// per layer, the slowest device's expert rows plus link_cost × its exchanged rows).
//
// The cap is chosen on data the placement was not planned from: the same curve is planned on
// the profile's even-numbered requests and timed on its odd-numbered ones, and the cap with the
// least modelled time there wins. (Chosen in-sample, the tightest cap always wins — balance is
// exact on the requests it was fitted to — while held out the load drifts; docs/PLANNER.md.)
#ifndef SEMMOE_PLANNER_SOLVER_BALANCE_CURVE_H_
#define SEMMOE_PLANNER_SOLVER_BALANCE_CURVE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "planner/affinity/token_affinity.h"
#include "planner/eval/evaluate.h"
#include "planner/placement/placement.h"
#include "planner/solver/dp_solver.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

struct BalanceCurveOptions {
  int num_devices = 8;
  double token_balance_eps = 0.05;
  double link_cost = EvalOptions::kLinkCost;
  // Caps tried after "off" (-1): expert load ≤ (1 + eps) × mean.
  std::vector<double> caps = {0.3, 0.2, 0.15, 0.1, 0.05, 0.02};
  int balance_groups = 1;  // expert_balance.h BalanceOptions::request_group from UsageClusters.
  uint64_t seed = 0;
};

struct BalancePoint {
  double eps = -1;  // -1: balance off.
  Placement placement;
  Metrics profile;     // On the profile, under the router's rule.
  Metrics validation;  // Planned on the even-numbered requests, on the odd-numbered ones.
};

// points[0] is the unbalanced co-schedule; `chosen` the index of the least modelled time in
// validation.
struct BalanceCurve {
  std::vector<BalancePoint> points;
  int chosen = 0;
};

// `solver`: the DP solver's options (its balance fields are ignored: the curve balances).
// InvalidArgument for a profile of fewer than 2 requests, and whatever SolveDp refuses.
absl::StatusOr<BalanceCurve> TraceBalanceCurve(const trace::TraceSet& profile,
                                               const DpSolverOptions& solver,
                                               const BalanceCurveOptions& options);

// The router's DP rule with `affinity` on `trace` for `placement`, with the time model.
absl::StatusOr<Metrics> EvaluateRouterRule(const trace::TraceSet& trace,
                                           const TokenAffinity& affinity,
                                           const Placement& placement, double token_balance_eps,
                                           double link_cost);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SOLVER_BALANCE_CURVE_H_
