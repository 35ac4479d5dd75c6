// Launchers of the smoke kernel (internal to //kernels/cuda; callers use smoke.h).
#ifndef SEMMOE_KERNELS_CUDA_SMOKE_KERNELS_H_
#define SEMMOE_KERNELS_CUDA_SMOKE_KERNELS_H_

#include <cstdint>

#include "kernels/cuda/launch.h"

namespace semmoe::kernels::cuda {

struct SaxpyArgs {
  float a = 0.0f;
  const float* x = nullptr;  // [n], device memory.
  float* y = nullptr;        // [n], device memory; y = a * x + y in place.
  int64_t n = 0;
};

// Enqueues the kernel on `stream`; returns the launch error (no synchronisation).
CudaError LaunchSaxpy(const SaxpyArgs& args, Stream stream);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_SMOKE_KERNELS_H_
