// Sum of G equal segments, element by element, added in segment order: out[i] = Σ_s in[s·n + i].
// The device half of a deterministic reduce-scatter (each rank sums what every rank sent it, in
// rank order, as the CPU backend does). CPU peer: kernels/cpu/segment_sum.h.
#ifndef SEMMOE_KERNELS_CUDA_SEGMENT_SUM_H_
#define SEMMOE_KERNELS_CUDA_SEGMENT_SUM_H_

#include <cstdint>

#include "kernels/cuda/launch.h"
#include "kernels/op_args.h"

namespace semmoe::kernels::cuda {

// Enqueues on `stream`; returns the launch error (no synchronisation).
CudaError LaunchSegmentSum(const SegmentSumArgs& args, Stream stream);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_SEGMENT_SUM_H_
