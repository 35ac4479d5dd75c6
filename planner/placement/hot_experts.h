// The hottest experts of a MoE layer: a top-k of expert activations, which operators watch
// instead of every expert's series (61 layers × 256 experts would be 15,616 of them). Engines
// report each expert's activations per layer (MoeLayerStats.expert_activations); the console and
// /metrics show the top of them.
#ifndef SEMMOE_PLANNER_PLACEMENT_HOT_EXPERTS_H_
#define SEMMOE_PLANNER_PLACEMENT_HOT_EXPERTS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace semmoe::planner {

struct HotExpert {
  int expert = 0;
  int64_t activations = 0;
};

// The (at most) k experts with the most activations, most first (ties: the lower id); experts
// with none are left out. `activations[e]`: expert e's.
std::vector<HotExpert> HottestExperts(absl::Span<const int64_t> activations, int k);

// Adds `more` into `sum` element-wise, growing `sum` to the longer of the two (ranks report
// vectors over the experts they were built for).
void AddActivations(absl::Span<const int64_t> more, std::vector<int64_t>& sum);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_PLACEMENT_HOT_EXPERTS_H_
