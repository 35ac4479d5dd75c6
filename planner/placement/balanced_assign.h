// The shuffled reduce-scatter's data rule (docs/PARALLEL.md, "Attention-TP"), shared by the engine
// (which runs it on every Attention-TP batch) and the planner (which evaluates it on traces), so
// both mean the same thing: each device takes at most its capacity — the equal chunk (the first T
// mod G devices one more), or with a slack ε up to ⌊(1 + ε) · T / G⌋ tokens, so that token load
// stays within ε of the mean as the planner's balance constraint allows; the most confident token
// (highest best score) is placed first, each on its best-scoring device that still has room, ties
// to the device with the most room left. A token whose favourite is full therefore spills to its
// next-best device rather than to an arbitrary one; a token with no preference (all scores equal)
// goes to the least-full device.
#ifndef SEMMOE_PLANNER_PLACEMENT_BALANCED_ASSIGN_H_
#define SEMMOE_PLANNER_PLACEMENT_BALANCED_ASSIGN_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace semmoe::planner {

// Equal chunk sizes for `tokens` over `devices`.
std::vector<int64_t> EqualChunks(int64_t tokens, int devices);

// The most tokens each device may take: max(equal chunk, ⌊(1 + slack) · tokens / devices⌋).
// slack 0 gives EqualChunks; the capacities always add up to at least `tokens`.
std::vector<int64_t> ChunkCapacities(int64_t tokens, int devices, double slack);

// scores: row-major [tokens, devices] (e.g. the expected share of a token's experts on each
// device). Returns each token's device; no device gets more than its ChunkCapacities (with
// slack 0: exactly EqualChunks). REQUIRES: scores.size() is a multiple of devices ≥ 1, slack ≥ 0.
std::vector<int32_t> AssignBalanced(absl::Span<const float> scores, int devices, double slack = 0);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_PLACEMENT_BALANCED_ASSIGN_H_
