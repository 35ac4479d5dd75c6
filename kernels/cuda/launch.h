// The two CUDA types the public launcher headers of kernels/cuda name, declared without CUDA's
// headers, so host code includes those headers with no CUDA include path: a stream and a launch
// result.
#ifndef SEMMOE_KERNELS_CUDA_LAUNCH_H_
#define SEMMOE_KERNELS_CUDA_LAUNCH_H_

struct CUstream_st;  // CUDA's opaque stream type.

namespace semmoe::kernels::cuda {

// The same type as cudaStream_t (null: the default stream).
using Stream = CUstream_st*;

// A cudaError_t value (0: cudaSuccess); CUDA_RETURN_IF_ERROR (cuda_status.h) takes it.
using CudaError = int;

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_LAUNCH_H_
