// SwiGLU experts over rows grouped by expert, on the GPU (bf16 weights and inputs, f32
// accumulation); CPU reference kernels/cpu/grouped_swiglu.h, compared by
// kernels/cuda/grouped_swiglu_test. A direct kernel (one thread per output, in two passes via an
// f32 activation buffer): correct for any shape, not yet tiled for tensor cores
// (tools/bench_kernels measures how far from the GPU's GEMM rate it is).
#ifndef SEMMOE_KERNELS_CUDA_GROUPED_SWIGLU_H_
#define SEMMOE_KERNELS_CUDA_GROUPED_SWIGLU_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace semmoe::kernels::cuda {

struct GroupedSwiGluArgs {
  const uint16_t* x;       // [rows, hidden] bf16 bits, device memory.
  const int64_t* offsets;  // [experts + 1], device memory.
  int experts;
  int64_t rows;  // offsets[experts] (host copy, to size the launch).
  int64_t hidden, inter;
  const uint16_t* gate;  // [experts, inter, hidden] bf16 bits.
  const uint16_t* up;    // [experts, inter, hidden].
  const uint16_t* down;  // [experts, hidden, inter].
  float* act;            // Scratch: [rows, inter] f32.
  float* out;            // [rows, hidden] f32.
};

cudaError_t LaunchGroupedSwiGlu(const GroupedSwiGluArgs& args, cudaStream_t stream);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_GROUPED_SWIGLU_H_
