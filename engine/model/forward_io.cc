#include "engine/model/forward_io.h"

#include "absl/strings/str_cat.h"

namespace semmoe::engine::model {

absl::StatusOr<BatchShape> CheckBatch(const ModelConfig& c, absl::Span<const SequenceInput> batch) {
  BatchShape shape;
  for (size_t s = 0; s < batch.size(); ++s) {
    const SequenceInput& seq = batch[s];
    const int64_t n = static_cast<int64_t>(seq.tokens.size());
    if (n == 0) return absl::InvalidArgumentError(absl::StrCat("sequence ", s, " has no tokens"));
    if (seq.kv == nullptr) return absl::InvalidArgumentError("sequence without a KV cache");
    if (seq.start_position < 0 || seq.start_position + n > c.max_position_embeddings) {
      return absl::InvalidArgumentError(
          absl::StrCat("sequence ", s, ": positions up to ", seq.start_position + n,
                       " exceed max_position_embeddings ", c.max_position_embeddings));
    }
    if (seq.start_position + n > seq.kv->capacity()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sequence ", s, ": KV capacity ", seq.kv->capacity(), " < ", seq.start_position + n));
    }
    for (int32_t id : seq.tokens) {
      if (id < 0 || id >= c.vocab_size) {
        return absl::InvalidArgumentError(
            absl::StrCat("token id ", id, " is outside the vocabulary [0, ", c.vocab_size, ")"));
      }
    }
    shape.tokens += n;
    shape.logit_rows += seq.logits == LogitsMode::kAll    ? n
                        : seq.logits == LogitsMode::kLast ? 1
                                                          : 0;
  }
  return shape;
}

}  // namespace semmoe::engine::model
