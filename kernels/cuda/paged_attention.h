// Attention over a paged KV cache on the GPU, for prefill and decode alike: every query token
// names its sequence and position and attends to that sequence's cached positions [0, position]
// (causal; the token's own key and value are already in the cache). One warp per (token, query
// head), an online softmax over positions (no context-length limit); head_dim up to 1024, any
// width (MLA's absorbed latent heads are 576 floats for DeepSeek-V3). CPU reference:
// kernels/cpu/paged_attention.h (same arguments), compared by kernels/cuda/paged_attention_test.
#ifndef SEMMOE_KERNELS_CUDA_PAGED_ATTENTION_H_
#define SEMMOE_KERNELS_CUDA_PAGED_ATTENTION_H_

#include <cstdint>

#include "kernels/cuda/launch.h"
#include "kernels/op_args.h"

namespace semmoe::kernels::cuda {

CudaError LaunchPagedAttention(const PagedAttentionArgs& args, Stream stream);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_PAGED_ATTENTION_H_
