// KvSequence: where a sequence's attention keys and values are, for the forward pass.
//
// The keys and values live in the forward's own arena (engine/forward/cpu_forward.h on the CPU,
// engine/gpu/gpu_transformer.h on a GPU), in pages; a sequence names its pages in order (its page
// table) and how many positions they hold. The runtime's paged cache hands them out
// (engine/runtime/kv_cache.h). UnpagedKvSequence, a capacity without pages, is what tests give a
// forward to see it refused.
#ifndef SEMMOE_ENGINE_MODEL_KV_SEQUENCE_H_
#define SEMMOE_ENGINE_MODEL_KV_SEQUENCE_H_

#include <cstdint>

#include "absl/types/span.h"

namespace semmoe::engine::model {

class KvSequence {
 public:
  virtual ~KvSequence() = default;
  // Positions [0, capacity()) are writable.
  virtual int capacity() const = 0;
  // Position p is in page page_table()[p / page_size] of the forward's arena; empty: no pages.
  virtual absl::Span<const int32_t> page_table() const = 0;
};

class UnpagedKvSequence : public KvSequence {
 public:
  explicit UnpagedKvSequence(int capacity) : capacity_(capacity) {}
  int capacity() const override { return capacity_; }
  absl::Span<const int32_t> page_table() const override { return {}; }

 private:
  int capacity_;
};

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_MODEL_KV_SEQUENCE_H_
