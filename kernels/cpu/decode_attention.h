// Attention for a few new tokens over cached keys and values, read in place (the decode step).
//
// One call handles the query heads of one GQA group (they share a KV head) for one new token:
// scores = q·kᵀ · scale over `context` positions, softmax, out = Σ p·v. Cache rows are given as
// pointers (a paged cache is not contiguous) plus an offset to this KV head's slice.
//
// Query heads go in pairs, so every key and value load serves two heads (GQA); scores are
// computed several positions at a time with one transpose-add, and the weighted sum keeps its
// accumulators in registers. GCC vector extensions: AVX2 under -march=x86-64-v3, SSE otherwise.
#ifndef SEMMOE_KERNELS_CPU_DECODE_ATTENTION_H_
#define SEMMOE_KERNELS_CPU_DECODE_ATTENTION_H_

#include <cstdint>

namespace semmoe::kernels::cpu {

struct DecodeAttentionArgs {
  const float* q;  // [group, head_dim], contiguous.
  int group;       // Query heads sharing this KV head (≥ 1).
  int head_dim;
  const float* const* keys;    // [context] row pointers; this head's key is keys[p] + offset.
  const float* const* values;  // [context] row pointers; value is values[p] + offset.
  int64_t offset;
  int context;    // Positions visible (≥ 1).
  float scale;    // Usually 1/sqrt(head_dim).
  float* scores;  // Workspace: [2 × context] floats.
  float* out;     // [group, head_dim], overwritten.
};

void DecodeAttention(const DecodeAttentionArgs& args);

}  // namespace semmoe::kernels::cpu

#endif  // SEMMOE_KERNELS_CPU_DECODE_ATTENTION_H_
