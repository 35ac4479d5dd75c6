#include "kernels/cuda/segment_sum.h"

namespace semmoe::kernels::cuda {
namespace {

__global__ void SegmentSumKernel(const float* __restrict__ in, int segments, int64_t n,
                                 float* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int s = 0; s < segments; ++s) sum += in[s * n + i];  // Segment order, as on the CPU.
    out[i] = sum;
  }
}

}  // namespace

CudaError LaunchSegmentSum(const SegmentSumArgs& args, Stream stream) {
  if (args.n <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t wanted = (args.n + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(wanted < 65535 ? wanted : 65535);
  SegmentSumKernel<<<blocks, kThreads, 0, stream>>>(args.in, args.segments, args.n, args.out);
  return cudaGetLastError();
}

}  // namespace semmoe::kernels::cuda
