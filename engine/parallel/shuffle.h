// The token order of Attention-TP's reduce-scatter / all-gather (docs/PARALLEL.md,
// "Attention-TP"). Plain: tokens in batch order, contiguous equal chunks. Shuffled: tokens go to
// devices by the rule planner/placement/balanced_assign.h shares with the planner's evaluation —
// chunks of at most the equal share (or, with a slack ε, ⌊(1 + ε) · tokens / ranks⌋), most
// confident first, each to its best-scoring device with room (an overflowing
// token lands on its next-best device; one with no preference on the least-full) — and within a
// chunk tokens keep their batch order.
#ifndef SEMMOE_ENGINE_PARALLEL_SHUFFLE_H_
#define SEMMOE_ENGINE_PARALLEL_SHUFFLE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace semmoe::engine {

struct ShufflePlan {
  std::vector<int32_t> order;   // Packed position → batch token index (a permutation).
  std::vector<int64_t> counts;  // Tokens per rank; rank r owns order[Σ_{<r} counts, + counts[r]).
  int64_t begin(int rank) const;
};

// Contiguous equal chunks in batch order.
ShufflePlan PlainShuffle(int64_t tokens, int ranks);

// scores: row-major [tokens, ranks], e.g. the predicted share of each token's experts per rank.
// Every rank computes the same plan from the same scores (the rule is deterministic).
ShufflePlan PlanShuffle(absl::Span<const float> scores, int ranks, double slack = 0);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_SHUFFLE_H_
