// Greedy generation of a fixed set of prompts as one batch: a prefill, then `decode_steps`
// decode steps — exactly 1 + decode_steps forward passes, even with no prompts, which is the
// shape every rank of an EP group must follow. For the differential tests and bench_ep; the
// serving path is engine/runtime's BatchEngine.
#ifndef SEMMOE_ENGINE_PARALLEL_LOCKSTEP_GREEDY_H_
#define SEMMOE_ENGINE_PARALLEL_LOCKSTEP_GREEDY_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/routing.h"
#include "engine/model/forward_io.h"
#include "engine/runtime/kv_cache.h"

namespace semmoe::engine {

struct GreedyOutput {
  std::vector<std::vector<float>> logits;  // Per forward; empty unless keep_logits.
  std::vector<int32_t> tokens;             // 1 + decode_steps greedy tokens.
};

struct LockstepGreedyOptions {
  int decode_steps = 0;
  bool keep_logits = false;
  // If set, the routing of every forward (per MoE layer, the rows this process routed).
  std::vector<std::vector<model::Routing>>* routing = nullptr;
};

using GreedyForwardFn = std::function<absl::StatusOr<model::ForwardOutput>(
    absl::Span<const model::SequenceInput>, const model::ForwardOptions&)>;

// `forward` runs each pass over sequences whose pages `pages` hands out (the forward's arena's,
// RankModel::NewPageCache; or a host arena for a forward that reads it). Reserve's error when the
// prompts and their decode steps do not fit; the forward's errors as they are.
absl::StatusOr<std::vector<GreedyOutput>> RunLockstepGreedy(
    const GreedyForwardFn& forward, runtime::PagedKvCache& pages,
    const std::vector<std::vector<int32_t>>& prompts, const LockstepGreedyOptions& options);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_LOCKSTEP_GREEDY_H_
