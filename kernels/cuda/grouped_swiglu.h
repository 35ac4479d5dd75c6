// SwiGLU experts over rows grouped by expert, on the GPU (bf16 weights and inputs, f32
// accumulation); CPU reference kernels/cpu/grouped_swiglu.h, compared by
// kernels/cuda/grouped_swiglu_test. Two versions: a direct kernel (one thread per output, in two
// passes via an f32 activation buffer) and a tensor-core one (below); tools/bench_kernels
// measures both against the GPU's GEMM rate.
#ifndef SEMMOE_KERNELS_CUDA_GROUPED_SWIGLU_H_
#define SEMMOE_KERNELS_CUDA_GROUPED_SWIGLU_H_

#include <cstdint>

#include "kernels/cuda/launch.h"
#include "kernels/op_args.h"

namespace semmoe::kernels::cuda {

CudaError LaunchGroupedSwiGlu(const GroupedSwiGluArgs& args, Stream stream);

// The same on tensor cores (WMMA bf16 fragments, f32 accumulation): 16-row tiles within each
// expert's rows, 4 warps per 16 × 64 output block, operands staged through shared memory. The
// activation is rounded to bf16 before the down projection, so it matches the CPU reference run
// with `bf16_activation` (up to f32 summation order). `act` as above.
CudaError LaunchGroupedSwiGluTensorCore(const GroupedSwiGluArgs& args, Stream stream);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_GROUPED_SWIGLU_H_
