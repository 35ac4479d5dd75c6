#include "kernels/cuda/grouped_swiglu.h"

namespace semmoe::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__device__ float Bf16(uint16_t bits) { return __uint_as_float(static_cast<uint32_t>(bits) << 16); }

// The expert whose row range holds `row` (offsets ascending; binary search).
__device__ int ExpertOf(const int64_t* offsets, int experts, int64_t row) {
  int lo = 0, hi = experts - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (offsets[mid] <= row) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

__global__ void ActKernel(GroupedSwiGluArgs a) {
  const int64_t total = a.rows * a.inter;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / a.inter, i = idx % a.inter;
    const int e = ExpertOf(a.offsets, a.experts, r);
    const uint16_t* g = a.gate + (static_cast<int64_t>(e) * a.inter + i) * a.hidden;
    const uint16_t* u = a.up + (static_cast<int64_t>(e) * a.inter + i) * a.hidden;
    const uint16_t* x = a.x + r * a.hidden;
    float gs = 0.0f, us = 0.0f;
    for (int64_t h = 0; h < a.hidden; ++h) {
      const float xv = Bf16(x[h]);
      gs += Bf16(g[h]) * xv;
      us += Bf16(u[h]) * xv;
    }
    a.act[idx] = gs / (1.0f + expf(-gs)) * us;
  }
}

__global__ void DownKernel(GroupedSwiGluArgs a) {
  const int64_t total = a.rows * a.hidden;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / a.hidden, h = idx % a.hidden;
    const int e = ExpertOf(a.offsets, a.experts, r);
    const uint16_t* d = a.down + (static_cast<int64_t>(e) * a.hidden + h) * a.inter;
    const float* act = a.act + r * a.inter;
    float s = 0.0f;
    for (int64_t i = 0; i < a.inter; ++i) s += Bf16(d[i]) * act[i];
    a.out[idx] = s;
  }
}

int Blocks(int64_t work) {
  const int64_t wanted = (work + kThreads - 1) / kThreads;
  return static_cast<int>(wanted < 65535 ? (wanted > 0 ? wanted : 1) : 65535);
}

}  // namespace

CudaError LaunchGroupedSwiGlu(const GroupedSwiGluArgs& args, Stream stream) {
  if (args.experts <= 0 || args.hidden < 0 || args.inter < 0) return cudaErrorInvalidValue;
  if (args.rows <= 0 || args.hidden == 0) return cudaSuccess;
  ActKernel<<<Blocks(args.rows * args.inter), kThreads, 0, stream>>>(args);
  DownKernel<<<Blocks(args.rows * args.hidden), kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace semmoe::kernels::cuda
