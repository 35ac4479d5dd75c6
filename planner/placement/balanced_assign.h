// The shuffled reduce-scatter's data rule (DESIGN.md §4), shared by the engine (which runs it on
// every Attention-TP batch) and the planner (which evaluates it on traces), so both mean the same
// thing: tokens go to devices in equal chunks (the first T mod G devices take one more); the most
// confident token (highest best score) is placed first, each on its best-scoring device that
// still has room, ties to the device with the most room left. A token whose favourite is full
// therefore spills to its next-best device rather than to an arbitrary one; a token with no
// preference (all scores equal) goes to the least-full device.
#ifndef SEMMOE_PLANNER_PLACEMENT_BALANCED_ASSIGN_H_
#define SEMMOE_PLANNER_PLACEMENT_BALANCED_ASSIGN_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace semmoe::planner {

// Equal chunk sizes for `tokens` over `devices`.
std::vector<int64_t> EqualChunks(int64_t tokens, int devices);

// scores: row-major [tokens, devices] (e.g. the expected share of a token's experts on each
// device). Returns each token's device; counts per device equal EqualChunks. REQUIRES:
// scores.size() is a multiple of devices ≥ 1.
std::vector<int32_t> AssignBalanced(absl::Span<const float> scores, int devices);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_PLACEMENT_BALANCED_ASSIGN_H_
