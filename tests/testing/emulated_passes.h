// The passes the emulation tests of the parallel forward run on every rank and on the single
// device they are compared with (tests/gpu_*_emulation_test).
#ifndef SEMMOE_TESTS_TESTING_EMULATED_PASSES_H_
#define SEMMOE_TESTS_TESTING_EMULATED_PASSES_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/model/forward_io.h"
#include "engine/runtime/kv_cache.h"
#include "engine/text/config.h"

namespace semmoe::testing {

// Fresh sequences on a paged cache of `config`'s KV shape (page size 4, 48 pages), each with room
// for `capacity` positions. Failures are gtest failures.
struct PagedSequences {
  std::unique_ptr<engine::runtime::PagedKvCache> cache;
  std::vector<std::unique_ptr<engine::runtime::PagedSequence>> seqs;
};
PagedSequences NewPagedSequences(const engine::model::ModelConfig& config, size_t count,
                                 int capacity);

// Pass 0: a ragged prefill of `prompts` (sequence 1 wants every position's logits, the others
// their last). Pass p ≥ 1: one decode step per sequence, token next[s] at the position after the
// p − 1 earlier steps, its predecessor given. The spans point into `prompts` and `next`.
std::vector<engine::model::SequenceInput> PassBatch(
    int pass, const std::vector<std::vector<int32_t>>& prompts, const std::vector<int32_t>& next,
    const PagedSequences& sequences);

}  // namespace semmoe::testing

#endif  // SEMMOE_TESTS_TESTING_EMULATED_PASSES_H_
