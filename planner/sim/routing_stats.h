// RoutingStats: what a routing trace says about how predictable its experts are — the properties
// Sem-MoE's placements and routers live on — each as a *lift over a baseline*, so that a trained
// model's small shape and a large shape can be compared (docs/SIMULATE.md, "Traces at real
// shapes"). Learned on the even requests, measured on the odd ones:
//   popularity_cv  expert load skew: per layer the coefficient of variation of the experts'
//                  activation counts, mean over layers;
//   token_lift     how much a token id tells: hits of its K most frequent experts (ids seen
//                  twice or more) against the layer's K most popular, (hit − base)/(1 − base);
//   request_lift   how much a request keeps to its own experts: the share of its activations
//                  in its top M = max(K, E/8) experts, against the same requests with their
//                  tokens shuffled among requests (seeded);
//   layer_lift     how much the previous layer tells: hits of the K experts the transition
//                  counts from the previous layer's experts give, against the popular K.
#ifndef SEMMOE_PLANNER_SIM_ROUTING_STATS_H_
#define SEMMOE_PLANNER_SIM_ROUTING_STATS_H_

#include "planner/trace/trace_set.h"

namespace semmoe::planner::sim {

struct RoutingStats {
  double popularity_cv = 0;
  double token_lift = 0;
  double request_lift = 0;
  double layer_lift = 0;
};

// REQUIRES: a trace with at least two requests.
RoutingStats MeasureRouting(const trace::TraceSet& trace);

}  // namespace semmoe::planner::sim

#endif  // SEMMOE_PLANNER_SIM_ROUTING_STATS_H_
