// KvSequence: where the forward pass keeps one sequence's attention keys and values.
//
// The runtime's paged cache implements it over pages (engine/runtime/kv_cache.h): every forward
// (CpuForward, GpuTransformer) keeps keys and values in an arena of its own and reads only the
// page table. DenseKvSequence below, contiguous and without a page table, is what the tests
// give a forward to see it refused.
#ifndef SEMMOE_ENGINE_MODEL_KV_SEQUENCE_H_
#define SEMMOE_ENGINE_MODEL_KV_SEQUENCE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "engine/text/config.h"  // KvShape.

namespace semmoe::engine::model {

class KvSequence {
 public:
  virtual ~KvSequence() = default;
  // Positions [0, capacity()) are writable.
  virtual int capacity() const = 0;
  // The [key_size] / [value_size] row of `layer` at `position` (KvShape). REQUIRES: position <
  // capacity(). Value() of a shape without values is not called.
  virtual float* Key(int layer, int position) = 0;
  virtual float* Value(int layer, int position) = 0;
  // A paged sequence's page table (position p is in page page_table()[p / page_size]); empty
  // for a contiguous one. A forward pass that keeps the cache elsewhere (the GPU's) indexes its
  // own arena with it.
  virtual absl::Span<const int32_t> page_table() const { return {}; }
};

class DenseKvSequence : public KvSequence {
 public:
  DenseKvSequence(int num_layers, KvShape shape, int capacity)
      : shape_(shape),
        capacity_(capacity),
        keys_(static_cast<size_t>(num_layers) * capacity * shape.key_size),
        values_(static_cast<size_t>(num_layers) * capacity * shape.value_size) {}
  int capacity() const override { return capacity_; }
  float* Key(int layer, int position) override {
    return keys_.data() + (static_cast<size_t>(layer) * capacity_ + position) * shape_.key_size;
  }
  float* Value(int layer, int position) override {
    return values_.data() + (static_cast<size_t>(layer) * capacity_ + position) * shape_.value_size;
  }

 private:
  KvShape shape_;
  int capacity_;
  std::vector<float> keys_;
  std::vector<float> values_;
};

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_MODEL_KV_SEQUENCE_H_
