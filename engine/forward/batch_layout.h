// BatchLayout: a forward batch flattened the way the op sets' kernels read it — per token its id,
// position and sequence; the rows whose logits are wanted; every sequence's page table padded
// into one [sequences, max_pages] matrix. Host code only.
#ifndef SEMMOE_ENGINE_FORWARD_BATCH_LAYOUT_H_
#define SEMMOE_ENGINE_FORWARD_BATCH_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/forward_io.h"

namespace semmoe::engine::forward {

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

// CUDA-graph decode buckets (engine/forward/decode_graphs.h): the smallest power of two ≥ the
// batch's sequences, or 0 when the batch is not a pure decode step (one token per sequence, wanting
// its logits) or would need a bucket over `max_batch`.
int DecodeBucket(absl::Span<const model::SequenceInput> batch, int max_batch);

// Pads a pure decode step's layout to `bucket` sequences over page tables `max_pages` wide, so
// that every step of the bucket has the same shapes: each added sequence is one token (id 0,
// position 0) whose page is `scratch_page`, its logits computed after the real rows and dropped.
// INVALID_ARGUMENT when a sequence has more than `max_pages` pages or the layout more sequences
// than `bucket`.
absl::Status PadDecodeLayout(BatchLayout& b, int bucket, int max_pages, int scratch_page);

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_BATCH_LAYOUT_H_
