// Attention over a paged KV cache on the GPU, for prefill and decode alike: every query token
// names its sequence and position and attends to that sequence's cached positions [0, position]
// (causal; the token's own key and value are already in the cache). One warp per (token, query
// head), an online softmax over positions (no context-length limit). CPU reference:
// kernels/cpu/paged_attention.h (same arguments), compared by kernels/cuda/paged_attention_test.
#ifndef SEMMOE_KERNELS_CUDA_PAGED_ATTENTION_H_
#define SEMMOE_KERNELS_CUDA_PAGED_ATTENTION_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace semmoe::kernels::cuda {

struct PagedAttentionArgs {
  const float* q;  // [tokens, q_heads, head_dim].
  int64_t tokens;
  int q_heads, kv_heads, head_dim;  // q_heads % kv_heads == 0 (GQA); head_dim % 32 == 0, ≤ 256.
  const float* k_cache;             // [pages, page_size, kv_heads, head_dim].
  const float* v_cache;             // Same shape.
  int page_size;
  const int32_t* page_table;  // [sequences, max_pages]: a sequence's pages in order.
  int max_pages;
  const int32_t* seq_of_token;  // [tokens].
  const int32_t* position;      // [tokens]: attends to [0, position].
  float scale;
  float* out;  // [tokens, q_heads, head_dim].
};

cudaError_t LaunchPagedAttention(const PagedAttentionArgs& args, cudaStream_t stream);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_PAGED_ATTENTION_H_
