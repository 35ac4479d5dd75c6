// The differential scenario both the GPU forward (on a GPU) and ForwardRunner<CpuOps> (in CI)
// are held to: against the CPU Transformer, on sequences of one paged cache, a ragged prefill
// with every logits mode, the rest of a chunked prefill next to decode steps, and decode steps
// across page boundaries — the same logits (max difference ≤ 1e-4 of the largest) and routing
// (the same experts, weights within 1e-5).
#ifndef SEMMOE_ENGINE_FORWARD_TESTING_FORWARD_CHECK_H_
#define SEMMOE_ENGINE_FORWARD_TESTING_FORWARD_CHECK_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/transformer.h"
#include "engine/runtime/kv_cache.h"

namespace semmoe::engine::forward::testing {

using ForwardFn = std::function<absl::StatusOr<model::ForwardOutput>(
    absl::Span<const model::SequenceInput>, const model::ForwardOptions&)>;

// `cache`: page size 4, at least 48 free pages, a host arena (the reference's KV). The candidate
// keeps its own KV, indexed by the same page tables. `on_logits(what, got, want)` is called for
// every pass (error reports).
void ExpectSameAsCpu(const ForwardFn& candidate, const model::Transformer& reference,
                     runtime::PagedKvCache& cache,
                     const std::function<void(const std::string&, const model::Matrix&,
                                              const model::Matrix&)>& on_logits = nullptr);

}  // namespace semmoe::engine::forward::testing

#endif  // SEMMOE_ENGINE_FORWARD_TESTING_FORWARD_CHECK_H_
