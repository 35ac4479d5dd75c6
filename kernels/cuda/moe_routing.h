// MoE routing on the GPU; CPU references in kernels/cpu/moe_routing.h (same semantics, compared
// by kernels/cuda/moe_routing_test). All pointers are device memory; each call enqueues on
// `stream` and returns the launch error without synchronising.
#ifndef SEMMOE_KERNELS_CUDA_MOE_ROUTING_H_
#define SEMMOE_KERNELS_CUDA_MOE_ROUTING_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace semmoe::kernels::cuda {

// One warp per token: softmax over `experts` logits, top-k (ties: lower id), optional
// renormalisation. logits: [tokens, experts]; ids/weights: [tokens, k]. REQUIRES
// 0 < k <= experts <= 1024, k <= 32.
cudaError_t LaunchRouterGating(const float* logits, int64_t tokens, int experts, int k,
                               bool renormalize, int32_t* ids, float* weights, cudaStream_t stream);

// A stable counting sort of `entries` expert ids (one warp per expert, ballots keep entry
// order): offsets [experts + 1], entry_of_position and position_of_entry [entries].
// `counts` is scratch of `experts` int64.
cudaError_t LaunchPermuteByExpert(const int32_t* ids, int64_t entries, int experts, int64_t* counts,
                                  int64_t* offsets, int64_t* entry_of_position,
                                  int64_t* position_of_entry, cudaStream_t stream);

// y[p] = x[entry_of_position[p] / k]; x: [tokens, hidden], y: [entries, hidden].
cudaError_t LaunchGatherRows(const float* x, const int64_t* entry_of_position, int64_t entries,
                             int k, int64_t hidden, float* y, cudaStream_t stream);

// out[t] = Σ_j weights[t·k + j] · y[position_of_entry[t·k + j]], j ascending.
cudaError_t LaunchCombineRows(const float* y, const float* weights,
                              const int64_t* position_of_entry, int64_t tokens, int k,
                              int64_t hidden, float* out, cudaStream_t stream);

// packed[p] = x[order[p]]; and x[order[p]] = packed[p].
cudaError_t LaunchShufflePack(const float* x, const int32_t* order, int64_t rows, int64_t hidden,
                              float* packed, cudaStream_t stream);
cudaError_t LaunchShuffleUnpack(const float* packed, const int32_t* order, int64_t rows,
                                int64_t hidden, float* x, cudaStream_t stream);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_MOE_ROUTING_H_
