// Sum of G equal segments, element by element, added in segment order: out[i] = Σ_s in[s·n + i].
// The device half of a deterministic reduce-scatter (each rank sums what every rank sent it, in
// rank order, as the CPU backend does). CPU peer: kernels/cpu/segment_sum.h.
#ifndef SEMMOE_KERNELS_CUDA_SEGMENT_SUM_H_
#define SEMMOE_KERNELS_CUDA_SEGMENT_SUM_H_

#include <cstdint>

#include "kernels/cuda/launch.h"

namespace semmoe::kernels::cuda {

struct SegmentSumArgs {
  const float* in = nullptr;  // [segments, n], device memory.
  int segments = 0;
  int64_t n = 0;
  float* out = nullptr;  // [n], device memory (may not alias `in`).
};

// Enqueues on `stream`; returns the launch error (no synchronisation).
CudaError LaunchSegmentSum(const SegmentSumArgs& args, Stream stream);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_SEGMENT_SUM_H_
