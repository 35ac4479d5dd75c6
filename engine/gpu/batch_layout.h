// BatchLayout: a forward batch flattened the way the GPU kernels read it — per token its id,
// position and sequence; the rows whose logits are wanted; every sequence's page table padded
// into one [sequences, max_pages] matrix. Host code only (tested in CI without a GPU).
#ifndef SEMMOE_ENGINE_GPU_BATCH_LAYOUT_H_
#define SEMMOE_ENGINE_GPU_BATCH_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/transformer.h"

namespace semmoe::engine::gpu {

struct BatchLayout {
  std::vector<int32_t> ids, positions, seq_of_token;  // [tokens]
  std::vector<int32_t> logit_rows;  // Token rows whose logits are wanted, in output order.
  std::vector<int32_t> page_table;  // [sequences, max_pages]; padding entries are 0.
  int max_pages = 0;
};

// REQUIRES: model::CheckBatch(batch) passed (every sequence has tokens and a KV sequence).
// INVALID_ARGUMENT for a sequence without a page table, with pages of another size than
// `page_size`, or with a page outside [0, num_pages).
absl::StatusOr<BatchLayout> LayOutBatch(absl::Span<const model::SequenceInput> batch, int page_size,
                                        int num_pages);

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_BATCH_LAYOUT_H_
