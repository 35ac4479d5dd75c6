// Attention over a paged KV cache on the CPU: the reference of kernels/cuda/paged_attention.h
// (the same arguments). Every query token names its sequence and position and attends to that
// sequence's cached positions [0, position] (causal; its own key and value are in the cache).
// Built on DecodeAttention, one call per (token, KV head).
#ifndef SEMMOE_KERNELS_CPU_PAGED_ATTENTION_H_
#define SEMMOE_KERNELS_CPU_PAGED_ATTENTION_H_

#include <cstdint>

namespace semmoe::kernels::cpu {

struct PagedAttentionArgs {
  const float* q;  // [tokens, q_heads, head_dim].
  int64_t tokens;
  int q_heads, kv_heads, head_dim;  // q_heads % kv_heads == 0.
  const float* k_cache;             // [pages, page_size, kv_heads, head_dim].
  const float* v_cache;             // Same shape.
  int page_size;
  const int32_t* page_table;  // [sequences, max_pages].
  int max_pages;
  const int32_t* seq_of_token;  // [tokens].
  const int32_t* position;      // [tokens].
  float scale;
  float* out;  // [tokens, q_heads, head_dim].
};

void PagedAttention(const PagedAttentionArgs& args);

}  // namespace semmoe::kernels::cpu

#endif  // SEMMOE_KERNELS_CPU_PAGED_ATTENTION_H_
