// A one-kernel check that CUDA code builds, loads and computes: y = a * x + y on the GPU.
// Host-only header (no CUDA includes), like every public op header.
#ifndef SEMMOE_KERNELS_CUDA_SMOKE_H_
#define SEMMOE_KERNELS_CUDA_SMOKE_H_

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace semmoe::kernels::cuda {

// Copies x and y to device 0, runs the kernel, copies y back. InvalidArgument if the sizes
// differ; UNAVAILABLE without a GPU; any CUDA error as a Status naming the call.
absl::Status SaxpyOnDevice(float a, absl::Span<const float> x, absl::Span<float> y);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_SMOKE_H_
