// Data schedules for attention-DP driven by affinity: the router's rule. Each request, in
// arrival order, goes to the device where its prompt tokens' DP scores (TokenAffinity::DpScores)
// sum highest among devices with token capacity left ((1 + eps) · mean load); if none has room,
// to the least-loaded device.
#ifndef SEMMOE_PLANNER_EVAL_SCHEDULE_H_
#define SEMMOE_PLANNER_EVAL_SCHEDULE_H_

#include <vector>

#include "planner/trace/trace_set.h"

namespace semmoe::planner {

// scores: row-major [vocab_size, num_devices]; tokens ≥ vocab_size score 0.
std::vector<int> AffinityRequests(const trace::TraceSet& trace, const std::vector<float>& scores,
                                  int num_devices, double token_balance_eps = 0.05);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_EVAL_SCHEDULE_H_
