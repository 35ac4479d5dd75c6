#include "kernels/cuda/smoke_kernels.h"

namespace semmoe::kernels::cuda {
namespace {

__global__ void SaxpyKernel(float a, const float* __restrict__ x, float* __restrict__ y,
                            int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] = fmaf(a, x[i], y[i]);
  }
}

}  // namespace

CudaError LaunchSaxpy(const SaxpyArgs& args, Stream stream) {
  if (args.n <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t wanted = (args.n + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(wanted < 65535 ? wanted : 65535);
  SaxpyKernel<<<blocks, kThreads, 0, stream>>>(args.a, args.x, args.y, args.n);
  return cudaGetLastError();
}

}  // namespace semmoe::kernels::cuda
