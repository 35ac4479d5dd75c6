// The differential scenario every other way of running the forward is held to — the GPU forward
// (on a GPU), expert- and tensor-parallel ranks, the GPU emulation, ForwardRunner's options (in
// CI): on sequences of one paged cache, a ragged prefill with every logits mode, the rest of a
// chunked prefill next to decode steps, and decode steps across page boundaries, against each
// sequence run alone, its whole history in one prefill pass, on the product's CPU forward on one
// device (CpuForward, itself held to the PyTorch references and naive float64 forwards:
// engine/forward/cpu_forward_reference_test.cc, engine/model/architectures_test.cc) — the same
// logits (max difference ≤ 1e-4 of the largest) and routing (the same experts, weights within
// 1e-5). So batching, chunking, paging and decode (under MLA the absorbed form, against the
// prompt's expanded one) are checked too, whatever forward is the candidate.
#ifndef SEMMOE_ENGINE_FORWARD_TESTING_FORWARD_CHECK_H_
#define SEMMOE_ENGINE_FORWARD_TESTING_FORWARD_CHECK_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/forward_io.h"
#include "engine/model/weights.h"
#include "engine/runtime/kv_cache.h"

namespace semmoe::engine::forward::testing {

using ForwardFn = std::function<absl::StatusOr<model::ForwardOutput>(
    absl::Span<const model::SequenceInput>, const model::ForwardOptions&)>;

// `cache`: page size 4, at least 48 free pages, for the candidate's sequences (it keeps the KV).
// The reference is a CpuForward over `config` and `weights` (every expert loaded). `on_logits(what, got, want)` is called for every pass (error reports).
void ExpectSameAsCpu(const ForwardFn& candidate, const model::ModelConfig& config,
                     const model::ModelWeights& weights,
                     runtime::PagedKvCache& cache,
                     const std::function<void(const std::string&, const model::Matrix&,
                                              const model::Matrix&)>& on_logits = nullptr);

}  // namespace semmoe::engine::forward::testing

#endif  // SEMMOE_ENGINE_FORWARD_TESTING_FORWARD_CHECK_H_
