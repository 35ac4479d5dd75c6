// The token order of Attention-TP's reduce-scatter / all-gather (DESIGN.md §4, "Online TP
// reshuffle"). Plain: tokens in batch order, contiguous equal chunks. Shuffled: each token goes
// to the chunk of the device predicted to hold its experts, chunks stay equal (the first T mod G
// ranks take one more), tokens are placed most confident first and overflow spills to the
// least-full rank; within a chunk tokens keep their batch order.
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

// REQUIRES: device.size() == confidence.size(); every device in [0, ranks) or −1 (no
// prediction: placed last, wherever room is left).
ShufflePlan PlanShuffle(absl::Span<const int32_t> device, absl::Span<const float> confidence,
                        int ranks);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_SHUFFLE_H_
