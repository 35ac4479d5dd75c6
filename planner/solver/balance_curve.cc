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
  const std::vector<int> layers(planned.header.moe_layers.begin(),
                                planned.header.moe_layers.end());
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
  // Validation: plan on the even-numbered requests, time on the odd-numbered ones.
  trace::TraceSet halves[2];
  const size_t per = static_cast<size_t>(profile.num_layers()) * profile.top_k();
  for (int r = 0; r < profile.num_requests(); ++r) {
    trace::TraceSet& half = halves[r % 2];
    half.header = profile.header;
    const int64_t b = profile.request_begin[r], e = profile.request_begin[r + 1];
    RETURN_IF_ERROR(half.AddRequest(
        profile.request_names[r], {profile.tokens.begin() + b, profile.tokens.begin() + e},
        {profile.experts.begin() + b * per, profile.experts.begin() + e * per}));
  }
  ASSIGN_OR_RETURN(DpSolution even, SolveDp(halves[0], plain));
  ASSIGN_OR_RETURN(std::vector<BalancePoint> validation,
                   Points(halves[0], even, halves[1], BuildTokenAffinity(halves[0]), o));
  ASSIGN_OR_RETURN(DpSolution full, SolveDp(profile, plain));
  BalanceCurve curve;
  ASSIGN_OR_RETURN(curve.points, Points(profile, full, profile, BuildTokenAffinity(profile), o));
  for (size_t i = 0; i < curve.points.size(); ++i) {
    curve.points[i].validation = validation[i].profile;
    if (validation[i].profile.moe_time_per_token <
        validation[curve.chosen].profile.moe_time_per_token) {
      curve.chosen = static_cast<int>(i);
    }
  }
  return curve;
}

}  // namespace semmoe::planner
