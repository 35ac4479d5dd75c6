#include "planner/solver/balance_curve.h"

#include <algorithm>

#include "common/status_macros.h"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/eval/schedule.h"
#include "planner/solver/expert_balance.h"

namespace semmoe::planner {

absl::StatusOr<Metrics> EvaluateRouterRule(const trace::TraceSet& trace,
                                           const TokenAffinity& affinity,
                                           const Placement& placement, double token_balance_eps,
                                           double link_cost) {
  uint32_t vocab = 0;
  for (uint32_t t : trace.tokens) vocab = std::max(vocab, t + 1);
  const int g = placement.num_devices();
  return EvaluateDp(
      trace, placement,
      AffinityRequests(trace, affinity.DpScores(placement, vocab), g, token_balance_eps),
      {.link_cost = link_cost});
}

namespace {

// The placements of the curve for one co-schedule, each scored on `scored` with `affinity`.
absl::StatusOr<std::vector<BalancePoint>> Points(const trace::TraceSet& planned,
                                                 const DpSolution& solution,
                                                 const trace::TraceSet& scored,
                                                 const TokenAffinity& affinity,
                                                 const BalanceCurveOptions& o) {
  const int n = static_cast<int>(planned.header.num_experts);
  const std::vector<int> layers(planned.header.moe_layers.begin(), planned.header.moe_layers.end());
  const std::vector<int> groups = UsageClusters(planned, o.balance_groups, o.seed);
  std::vector<BalancePoint> points;
  std::vector<double> caps = {-1};
  caps.insert(caps.end(), o.caps.begin(), o.caps.end());
  for (double eps : caps) {
    BalancePoint point{.eps = eps, .placement = solution.placement};
    if (eps >= 0) {
      std::vector<std::vector<int32_t>> device_of(planned.num_layers(), std::vector<int32_t>(n));
      for (int l = 0; l < planned.num_layers(); ++l) {
        for (int e = 0; e < n; ++e) device_of[l][e] = solution.placement.Device(l, e);
      }
      BalanceExpertLoad(planned,
                        {.num_devices = o.num_devices,
                         .eps = eps,
                         .request_group = groups,
                         .request_device = solution.request_device},
                        device_of);
      ASSIGN_OR_RETURN(point.placement,
                       Placement::FromAssignment(layers, n, o.num_devices, device_of));
    }
    ASSIGN_OR_RETURN(point.profile, EvaluateRouterRule(scored, affinity, point.placement,
                                                       o.token_balance_eps, o.link_cost));
    points.push_back(std::move(point));
  }
  return points;
}

}  // namespace

absl::StatusOr<BalanceCurve> TraceBalanceCurve(const trace::TraceSet& profile,
                                               const DpSolverOptions& solver,
                                               const BalanceCurveOptions& o) {
  if (profile.num_requests() < 2) {
    return absl::InvalidArgumentError("the balance curve needs at least 2 profile requests");
  }
  DpSolverOptions plain = solver;
  plain.expert_balance_eps = -1;
  BalanceCurve curve;
  ASSIGN_OR_RETURN(DpSolution full, SolveDp(profile, plain));
  ASSIGN_OR_RETURN(curve.points, Points(profile, full, profile, BuildTokenAffinity(profile), o));
  // Validation: plan without one cluster of requests, time on it.
  const std::vector<int> fold = UsageClusters(profile, o.folds, o.seed);
  double tokens = 0;
  int used = 0;
  for (int f = 0; f < o.folds; ++f) {
    trace::TraceSet split[2];  // [0]: planned on; [1]: timed on.
    for (int r = 0; r < profile.num_requests(); ++r) {
      trace::TraceSet& part = split[fold[r] == f ? 1 : 0];
      part.header = profile.header;
      RETURN_IF_ERROR(part.CopyRequest(profile, r));
    }
    if (split[0].num_requests() == 0 || split[1].num_requests() == 0) continue;
    // The planned part may hold a request larger than its devices' token capacity: skip then.
    // One start (the folds only rank the caps), re-fitted to the router's rule as a build is.
    DpSolverOptions quick = plain;
    quick.starts = 1;
    quick.initial_request_device.clear();  // Numbered for the whole profile.
    quick.paper_start = false;
    absl::StatusOr<DpSolution> planned = SolveDp(split[0], quick);
    if (!planned.ok()) continue;
    ASSIGN_OR_RETURN(std::vector<BalancePoint> timed,
                     Points(split[0], *planned, split[1], BuildTokenAffinity(split[0]), o));
    const double n = static_cast<double>(split[1].num_tokens());
    for (size_t i = 0; i < timed.size(); ++i) {
      curve.points[i].validation_time += timed[i].profile.moe_time_per_token * n;
      // Beaten by no cap in this fold (by the margin): not robust to the mix.
      if (timed[i].profile.moe_time_per_token >
          (1 - o.min_gain) * timed[0].profile.moe_time_per_token) {
        curve.points[i].wins_every_fold = false;
      }
    }
    tokens += n;
    ++used;
  }
  for (size_t i = 0; i < curve.points.size(); ++i) {
    BalancePoint& p = curve.points[i];
    if (used < 2) {  // Nothing to validate on: the profile itself decides.
      p.validation_time = p.profile.moe_time_per_token;
      p.wins_every_fold =
          i == 0 ||
          p.validation_time < (1 - o.min_gain) * curve.points[0].profile.moe_time_per_token;
    } else {
      p.validation_time /= tokens;
    }
    // A cap costs LAR for certain: take one only if it beats no cap on every fold.
    if (i > 0 && p.wins_every_fold &&
        p.validation_time < curve.points[curve.chosen].validation_time) {
      curve.chosen = static_cast<int>(i);
    }
  }
  return curve;
}

}  // namespace semmoe::planner
