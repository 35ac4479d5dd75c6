// MoE routing on the GPU; CPU references in kernels/cpu/moe_routing.h (same semantics, compared
// by kernels/cuda/moe_routing_test). All pointers are device memory; each call enqueues on
// `stream` and returns the launch error without synchronising.
#ifndef SEMMOE_KERNELS_CUDA_MOE_ROUTING_H_
#define SEMMOE_KERNELS_CUDA_MOE_ROUTING_H_

#include <cstdint>

#include "kernels/cuda/launch.h"
#include "kernels/op_args.h"

namespace semmoe::kernels::cuda {

// One warp per token: the routing rule of RouterGatingArgs (softmax or sigmoid scores, the
// correction bias, group-limited choice, renormalisation and scale). logits: [tokens, experts];
// ids/weights: [tokens, k]. REQUIRES 0 < k <= experts <= 1024, k <= 32, groups <= 32.
CudaError LaunchRouterGating(const RouterGatingArgs& args, Stream stream);

// A stable counting sort of `entries` expert ids (one warp per expert, ballots keep entry
// order): offsets [experts + 1], entry_of_position and position_of_entry [entries].
// `counts` is scratch of `experts` int64.
CudaError LaunchPermuteByExpert(const PermuteByExpertArgs& args, Stream stream);

// y[p] = x[entry_of_position[p] / k]; x: [tokens, hidden], y: [entries, hidden].
CudaError LaunchGatherRows(const GatherRowsArgs& args, Stream stream);

// out[t] = Σ_j weights[t·k + j] · y[position_of_entry[t·k + j]], j ascending.
CudaError LaunchCombineRows(const CombineRowsArgs& args, Stream stream);

// packed[p] = x[order[p]]; and x[order[p]] = packed[p].
CudaError LaunchShufflePack(const float* x, const int32_t* order, int64_t rows, int64_t hidden,
                            float* packed, Stream stream);
CudaError LaunchShuffleUnpack(const float* packed, const int32_t* order, int64_t rows,
                              int64_t hidden, float* x, Stream stream);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_MOE_ROUTING_H_
