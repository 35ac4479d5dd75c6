// Element- and row-wise ops on the GPU, f32 rows in device memory; CPU peers in
// kernels/cpu/nn_ops.h (same arguments; compared by kernels/cuda/nn_ops_test). Each call
// enqueues on `stream` and returns the launch error without synchronising.
#ifndef SEMMOE_KERNELS_CUDA_NN_OPS_H_
#define SEMMOE_KERNELS_CUDA_NN_OPS_H_

#include <cstdint>

#include "kernels/cuda/launch.h"
#include "kernels/op_args.h"

namespace semmoe::kernels::cuda {

// x[r] = weight ⊙ x[r] / sqrt(mean(x[r]²) + eps), one block per row.
CudaError LaunchRmsNorm(const RmsNormArgs& args, Stream stream);

// Per row at positions[r], per head: optional RMSNorm over head_dim with `norm_weight` (Qwen3's
// q_norm/k_norm; null: none), then rotary embedding, rotate-half convention, from cos/sin tables
// [max_position, head_dim/2] (kernels/cpu RopeTables). One block per row.
CudaError LaunchQkNormRope(const QkNormRopeArgs& args, Stream stream);

// RoPE on the rotary part of each head (MLA), interleaved pairs or halves (PartialRopeArgs).
// One block per row.
CudaError LaunchPartialRope(const PartialRopeArgs& args, Stream stream);

// gate[i] = silu(gate[i]) · up[i].
CudaError LaunchSiluMul(float* gate, const float* up, int64_t n, Stream stream);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_NN_OPS_H_
