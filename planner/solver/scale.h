// The largest expert count per layer the planner's solvers take. The exact expert step is a
// Hungarian assignment, cubic in the experts a layer uses: at 256 experts (DeepSeek-V3) a
// 61-layer, 32-device build takes about a minute on one core (docs/PLANNER.md, "Solve time"),
// at 4,096 it would take days. Real MoE models have at most a few hundred experts per layer;
// a trace that claims more gets a clear error instead of a build that never ends.
#ifndef SEMMOE_PLANNER_SOLVER_SCALE_H_
#define SEMMOE_PLANNER_SOLVER_SCALE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace semmoe::planner {

inline constexpr uint32_t kMaxSolverExperts = 512;

// InvalidArgument naming the count when `num_experts` is over kMaxSolverExperts.
inline absl::Status CheckSolverScale(uint32_t num_experts) {
  if (num_experts <= kMaxSolverExperts) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the trace has ", num_experts, " experts per layer; the planner's solvers take at most ",
      kMaxSolverExperts, " (their expert step is cubic in the experts)"));
}

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SOLVER_SCALE_H_
