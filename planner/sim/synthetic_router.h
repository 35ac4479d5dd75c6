// A synthetic router: routing traces at shapes no trained model of ours has (DeepSeek-V3's 58
// MoE layers of 256 experts, top-8; Qwen3-235B's 94 of 128, top-8), with the properties the
// placements live on fitted to what `engine trace` measures on our trained models
// (planner/sim/routing_stats.h; docs/SIMULATE.md, "Traces at real shapes").
//
// Each token, at each layer, picks its top-K experts by score = log popularity (a Zipf law of
// exponent `popularity_skew` over the layer's experts in a random order) + `token_bias` on the
// K "home" experts of its token id (a fixed hash of id and layer) + `domain_bias` on its
// request's domain's E/8 experts + `layer_bias` on the experts a fixed per-layer map takes the
// previous layer's choice to + Gumbel noise (so: sampling K without replacement in proportion
// to exp(score)); optionally limited to the token's best groups of experts (`groups`). The
// requests, their lengths and token ids come from a source trace (ids
// spread over the target vocabulary by a fixed multiplicative hash when it is larger).
#ifndef SEMMOE_PLANNER_SIM_SYNTHETIC_ROUTER_H_
#define SEMMOE_PLANNER_SIM_SYNTHETIC_ROUTER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/sim/routing_stats.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner::sim {

struct SyntheticParams {
  double popularity_skew = 0.5;
  double token_bias = 2.0;
  double domain_bias = 1.0;
  double layer_bias = 1.0;
  // Group-limited routing (DeepSeek-V3's n_group / topk_group: a token's experts within its
  // best 4 of 8 groups, which its deployment maps to nodes): experts fall in `groups`
  // contiguous groups of E / groups; each token and layer first draws `top_groups` groups
  // without replacement in proportion to their experts' weights, then its K experts from
  // those groups only. 0: off. REQUIRES (when on): groups divides E, top_groups × E / groups ≥ K.
  int groups = 0, top_groups = 0;
};

// The largest a synthetic parameter may be: a skew of 100 already gives the 2nd expert 2^-100 of
// the 1st's weight; a bias of 100 multiplies by e^100.
inline constexpr double kMaxSyntheticParam = 100;

struct SyntheticShape {
  int layers = 0, experts = 0, top_k = 0;
  uint32_t vocab = 0;
};

// domain_of_request: a domain per source request (any small integers; empty: each request its
// own). InvalidArgument for a shape out of range (top_k > experts, experts > 65536, ...).
absl::StatusOr<trace::TraceSet> GenerateRouting(const trace::TraceSet& source,
                                                const std::vector<int>& domain_of_request,
                                                const SyntheticShape& shape,
                                                const SyntheticParams& params, uint64_t seed);

// The parameters whose routing at `shape` (on at most `max_requests` of the source's requests
// and 8 layers, for speed) measures closest to `target` (squared differences of the four
// statistics; coordinate search from `start`).
absl::StatusOr<SyntheticParams> FitSynthetic(const trace::TraceSet& source,
                                             const std::vector<int>& domain_of_request,
                                             const SyntheticShape& shape,
                                             const RoutingStats& target, uint64_t seed,
                                             SyntheticParams start = {}, int max_requests = 200);

}  // namespace semmoe::planner::sim

#endif  // SEMMOE_PLANNER_SIM_SYNTHETIC_ROUTER_H_
