#include "kernels/cuda/nn_ops.h"

namespace semmoe::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// Sum over the block (kThreads threads); every thread gets the total.
__device__ float BlockSum(float v, float* scratch) {
  for (int s = 16; s > 0; s >>= 1) v += __shfl_xor_sync(0xffffffffu, v, s);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) total += scratch[w];
  __syncthreads();
  return total;
}

__global__ void RmsNormKernel(float* x, int64_t rows, int64_t width, int64_t row_stride,
                              const float* __restrict__ weight, float eps) {
  __shared__ float scratch[kThreads / 32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float* row = x + r * row_stride;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < width; i += kThreads) sum += row[i] * row[i];
    const float scale = 1.0f / sqrtf(BlockSum(sum, scratch) / static_cast<float>(width) + eps);
    for (int64_t i = threadIdx.x; i < width; i += kThreads) row[i] = weight[i] * (row[i] * scale);
  }
}

__global__ void QkNormRopeKernel(float* x, int64_t rows, int64_t row_stride, int heads,
                                 int head_dim, const float* __restrict__ norm_weight, float eps,
                                 const int32_t* __restrict__ positions,
                                 const float* __restrict__ cos, const float* __restrict__ sin) {
  __shared__ float scratch[kThreads / 32];
  const int half = head_dim / 2;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* c = cos + static_cast<int64_t>(positions[r]) * half;
    const float* s = sin + static_cast<int64_t>(positions[r]) * half;
    for (int h = 0; h < heads; ++h) {
      float* v = x + r * row_stride + static_cast<int64_t>(h) * head_dim;
      if (norm_weight != nullptr) {
        float sum = 0.0f;
        for (int i = threadIdx.x; i < head_dim; i += kThreads) sum += v[i] * v[i];
        const float scale =
            1.0f / sqrtf(BlockSum(sum, scratch) / static_cast<float>(head_dim) + eps);
        for (int i = threadIdx.x; i < head_dim; i += kThreads) {
          v[i] = norm_weight[i] * (v[i] * scale);
        }
        __syncthreads();
      }
      for (int i = threadIdx.x; i < half; i += kThreads) {
        const float x1 = v[i], x2 = v[i + half];
        v[i] = __fsub_rn(__fmul_rn(x1, c[i]), __fmul_rn(x2, s[i]));
        v[i + half] = __fadd_rn(__fmul_rn(x2, c[i]), __fmul_rn(x1, s[i]));
      }
      __syncthreads();
    }
  }
}

__global__ void PartialRopeKernel(PartialRopeArgs a) {
  const int half = a.rope_dim / 2;
  const int first_step = a.interleaved ? 2 : 1;
  const int second_offset = a.interleaved ? 1 : half;
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const float* c = a.cos + static_cast<int64_t>(a.positions[r]) * half;
    const float* s = a.sin + static_cast<int64_t>(a.positions[r]) * half;
    for (int j = threadIdx.x; j < a.heads * half; j += kThreads) {
      const int h = j / half, i = j % half;
      float* x1 = a.x + r * a.row_stride + h * a.head_stride + i * first_step;
      float* x2 = x1 + second_offset;
      const float v1 = *x1, v2 = *x2;
      *x1 = __fsub_rn(__fmul_rn(v1, c[i]), __fmul_rn(v2, s[i]));
      *x2 = __fadd_rn(__fmul_rn(v2, c[i]), __fmul_rn(v1, s[i]));
    }
  }
}

__global__ void SiluMulKernel(float* gate, const float* __restrict__ up, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = gate[i];
    gate[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

int Blocks(int64_t work) { return static_cast<int>(work < 65535 ? (work > 0 ? work : 1) : 65535); }

}  // namespace

CudaError LaunchRmsNorm(const RmsNormArgs& a, Stream stream) {
  float* x = a.x;
  const int64_t rows = a.rows, width = a.width, row_stride = a.row_stride;
  const float* weight = a.weight;
  const float eps = a.eps;
  if (rows <= 0 || width <= 0) return cudaSuccess;
  RmsNormKernel<<<Blocks(rows), kThreads, 0, stream>>>(x, rows, width, row_stride, weight, eps);
  return cudaGetLastError();
}

CudaError LaunchQkNormRope(const QkNormRopeArgs& a, Stream stream) {
  float* x = a.x;
  const int64_t rows = a.rows, row_stride = a.row_stride;
  const int heads = a.heads, head_dim = a.head_dim;
  const float* norm_weight = a.norm_weight;
  const float eps = a.eps;
  const int32_t* positions = a.positions;
  const float* cos = a.cos;
  const float* sin = a.sin;
  if (head_dim % 2 != 0) return cudaErrorInvalidValue;
  if (rows <= 0 || heads <= 0 || head_dim <= 0) return cudaSuccess;
  QkNormRopeKernel<<<Blocks(rows), kThreads, 0, stream>>>(x, rows, row_stride, heads, head_dim,
                                                          norm_weight, eps, positions, cos, sin);
  return cudaGetLastError();
}

CudaError LaunchPartialRope(const PartialRopeArgs& a, Stream stream) {
  if (a.rope_dim % 2 != 0) return cudaErrorInvalidValue;
  if (a.rows <= 0 || a.heads <= 0 || a.rope_dim <= 0) return cudaSuccess;
  PartialRopeKernel<<<Blocks(a.rows), kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

CudaError LaunchSiluMul(float* gate, const float* up, int64_t n, Stream stream) {
  if (n <= 0) return cudaSuccess;
  SiluMulKernel<<<Blocks((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(gate, up, n);
  return cudaGetLastError();
}

}  // namespace semmoe::kernels::cuda
