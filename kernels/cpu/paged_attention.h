// Attention over a paged KV cache on the CPU: the reference of kernels/cuda/paged_attention.h
// (the same arguments). Every query token names its sequence and position and attends to that
// sequence's cached positions [0, position] (causal; its own key and value are in the cache).
// Built on DecodeAttention, one call per (token, KV head); values of another head size than the
// keys' (v_head_dim) take a plain loop.
#ifndef SEMMOE_KERNELS_CPU_PAGED_ATTENTION_H_
#define SEMMOE_KERNELS_CPU_PAGED_ATTENTION_H_

#include <cstdint>

#include "kernels/op_args.h"

namespace semmoe::kernels::cpu {

void PagedAttention(const PagedAttentionArgs& args);

}  // namespace semmoe::kernels::cpu

#endif  // SEMMOE_KERNELS_CPU_PAGED_ATTENTION_H_
