// Co-scheduling for attention-TP: per MoE layer, a placement under which the token-id rule of
// the shuffled reduce-scatter (eval/schedule.h SrsTokens) keeps activations local.
//
// At each layer the problem is DP's with token ids in the role of requests (every occurrence of
// an id goes where the id is predicted to go, and ids are balanced by their occurrences), so
// each layer is solved by the DP co-scheduler on a one-layer trace grouped by token id.
#ifndef SEMMOE_PLANNER_SOLVER_TP_SOLVER_H_
#define SEMMOE_PLANNER_SOLVER_TP_SOLVER_H_

#include "absl/status/statusor.h"
#include "planner/placement/placement.h"
#include "planner/solver/dp_solver.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

// Batch size of the SRS rule the TP solver scores layouts with (the planner's evaluation uses the
// same).
inline constexpr int kSrsBatchTokens = 256;

// Seeded starts per layer, besides the one from the co-activation baseline (which wins most
// layers; more seeded starts cost time at DeepSeek-V3 scale and gained nothing measurable).
inline constexpr int kTpSeededStarts = 1;

// Uses options.num_devices, token_balance_eps, max_rounds and seed.
absl::StatusOr<Placement> SolveTp(const trace::TraceSet& trace, const DpSolverOptions& options);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SOLVER_TP_SOLVER_H_
