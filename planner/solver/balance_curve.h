// LAR against expert-load balance for attention-DP, and the point a time model picks.
//
// One co-schedule (the DP solver's, balance off) is balanced at each cap of a grid
// (expert_balance.h); each point is scored under the router's rule with the profile's token
// affinity: LAR, expert-load imbalance and the MoE time model (evaluate.h moe_time_per_token:
// per layer, the slowest device's expert rows plus link_cost × its exchanged rows).
//
// The cap is chosen for traffic whose mix differs from the profile's, as served traffic does:
// the profile's requests are clustered by expert use (expert_balance.h UsageClusters, `folds`
// clusters), and for each cluster the curve is planned on the other clusters and timed on it.
// Among the caps that beat no cap by at least `min_gain` on every fold (a cap surely costs LAR;
// it must pay whatever the mix), the one of least modelled time summed over the folds wins;
// if none does, no cap.
// Chosen in-sample, or on a random half of the profile, the tightest cap always won — the load
// is then exactly balanced for the mix it was fitted to — and on prompts from another source it
// cost LAR and time (docs/PLANNER.md, "Balance").
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
  std::vector<double> caps = {0.2, 0.1, 0.05, 0.02};
  int balance_groups = 1;  // expert_balance.h BalanceOptions::request_group from UsageClusters.
  int folds = 3;           // Clusters of the profile the choice is validated on.
  double min_gain = 0.01;  // Of modelled time over no cap, on every fold, for a cap to count.
  uint64_t seed = 0;
};

struct BalancePoint {
  double eps = -1;  // -1: balance off.
  Placement placement;
  Metrics profile;  // On the profile, under the router's rule.
  // Modelled MoE time per token over the folds, each planned without the cluster it is timed on.
  double validation_time = 0;
  bool wins_every_fold = true;  // Beats no cap by min_gain on each fold.
};

// points[0] is the unbalanced co-schedule; `chosen` the index of the point kept (see above).
struct BalanceCurve {
  std::vector<BalancePoint> points;
  int chosen = 0;
};

// `solver`: the DP solver's options (its balance fields are ignored: the curve balances).
// InvalidArgument for a profile of fewer than 2 requests, and whatever SolveDp refuses. With
// fewer than 2 non-empty folds the choice falls back to the profile itself.
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
