#include <cuda_bf16.h>

#include "kernels/cuda/forward_ops.h"

namespace semmoe::kernels::cuda {
namespace {

constexpr int kThreads = 256;

int Blocks(int64_t work) { return static_cast<int>(work < 65535 ? (work > 0 ? work : 1) : 65535); }

// One block per row (grid-stride over rows), threads over the row's width.
__global__ void GatherRowsByIndexKernel(const float* __restrict__ table,
                                        const int32_t* __restrict__ index, int64_t rows,
                                        int64_t width, float* __restrict__ out) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* src = table + static_cast<int64_t>(index[r]) * width;
    for (int64_t i = threadIdx.x; i < width; i += blockDim.x) out[r * width + i] = src[i];
  }
}

__global__ void AddRowBiasKernel(float* x, int64_t rows, int64_t width, int64_t row_stride,
                                 const float* __restrict__ bias) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    for (int64_t i = threadIdx.x; i < width; i += blockDim.x) x[r * row_stride + i] += bias[i];
  }
}

__global__ void AddInPlaceKernel(float* x, const float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] += y[i];
  }
}

__global__ void SigmoidGateAddKernel(float* out, const float* __restrict__ y,
                                     const float* __restrict__ gate, int64_t rows, int64_t width) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float g = 1.0f / (1.0f + expf(-gate[r]));
    for (int64_t i = threadIdx.x; i < width; i += blockDim.x) {
      out[r * width + i] += g * y[r * width + i];
    }
  }
}

__global__ void ScatterAddRowsKernel(float* dst, const float* __restrict__ src,
                                     const int32_t* __restrict__ index, int64_t rows,
                                     int64_t width) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float* d = dst + static_cast<int64_t>(index[r]) * width;
    for (int64_t i = threadIdx.x; i < width; i += blockDim.x) d[i] += src[r * width + i];
  }
}

__global__ void StorePagedKvKernel(StorePagedKvArgs a) {
  for (int64_t t = blockIdx.x; t < a.tokens; t += gridDim.x) {
    const int64_t p = a.position[t];
    const int64_t page =
        a.page_table[static_cast<int64_t>(a.seq_of_token[t]) * a.max_pages + p / a.page_size];
    const int64_t at = (page * a.page_size + p % a.page_size) * a.width;
    if (a.cache16 != nullptr) {
      for (int64_t i = threadIdx.x; i < a.width; i += blockDim.x) {
        a.cache16[at + i] = __bfloat16_as_ushort(__float2bfloat16_rn(a.rows[t * a.width + i]));
      }
    } else {
      for (int64_t i = threadIdx.x; i < a.width; i += blockDim.x) {
        a.cache[at + i] = a.rows[t * a.width + i];
      }
    }
  }
}

__global__ void RoundToBf16Kernel(const float* __restrict__ x, int64_t n,
                                  uint16_t* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(x[i]));
  }
}

// E4M3 "fn" (kernels/dtype.h F8E4M3ToF32): bias 7, subnormals m/8 · 2^-6, S.1111.111 NaN.
__device__ float DecodeE4M3(uint8_t b) {
  const float sign = (b & 0x80u) ? -1.0f : 1.0f;
  const int exponent = (b >> 3) & 0xF, mantissa = b & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return __int_as_float(0x7fc00000);
  if (exponent == 0) return sign * ldexpf(static_cast<float>(mantissa), -9);
  return sign * ldexpf(static_cast<float>(8 + mantissa), exponent - 10);
}

__global__ void DequantizeFp8Kernel(Fp8DequantArgs a) {
  const int64_t per = a.rows * a.cols, n = a.count * per;
  const int64_t sr = (a.rows + a.block_rows - 1) / a.block_rows;
  const int64_t sc = (a.cols + a.block_cols - 1) / a.block_cols;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t m = t / per, i = (t % per) / a.cols, j = t % a.cols;
    const float scale = a.scales[m * sr * sc + (i / a.block_rows) * sc + j / a.block_cols];
    a.out[t] = __bfloat16_as_ushort(__float2bfloat16_rn(DecodeE4M3(a.codes[t]) * scale));
  }
}

}  // namespace

CudaError LaunchGatherRowsByIndex(const float* table, const int32_t* index, int64_t rows,
                                  int64_t width, float* out, Stream stream) {
  if (rows <= 0 || width <= 0) return cudaSuccess;
  GatherRowsByIndexKernel<<<Blocks(rows), kThreads, 0, stream>>>(table, index, rows, width, out);
  return cudaGetLastError();
}

CudaError LaunchAddRowBias(float* x, int64_t rows, int64_t width, int64_t row_stride,
                           const float* bias, Stream stream) {
  if (rows <= 0 || width <= 0) return cudaSuccess;
  AddRowBiasKernel<<<Blocks(rows), kThreads, 0, stream>>>(x, rows, width, row_stride, bias);
  return cudaGetLastError();
}

CudaError LaunchAddInPlace(float* x, const float* y, int64_t n, Stream stream) {
  if (n <= 0) return cudaSuccess;
  AddInPlaceKernel<<<Blocks((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

CudaError LaunchSigmoidGateAdd(float* out, const float* y, const float* gate, int64_t rows,
                               int64_t width, Stream stream) {
  if (rows <= 0 || width <= 0) return cudaSuccess;
  SigmoidGateAddKernel<<<Blocks(rows), kThreads, 0, stream>>>(out, y, gate, rows, width);
  return cudaGetLastError();
}

CudaError LaunchScatterAddRows(float* dst, const float* src, const int32_t* index, int64_t rows,
                               int64_t width, Stream stream) {
  if (rows <= 0 || width <= 0) return cudaSuccess;
  ScatterAddRowsKernel<<<Blocks(rows), kThreads, 0, stream>>>(dst, src, index, rows, width);
  return cudaGetLastError();
}

CudaError LaunchStorePagedKv(const StorePagedKvArgs& args, Stream stream) {
  if (args.page_size <= 0 || args.max_pages < 0) return cudaErrorInvalidValue;
  if (args.tokens <= 0 || args.width <= 0) return cudaSuccess;
  StorePagedKvKernel<<<Blocks(args.tokens), kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

CudaError LaunchRoundToBf16(const float* x, int64_t n, uint16_t* out, Stream stream) {
  if (n <= 0) return cudaSuccess;
  RoundToBf16Kernel<<<Blocks((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(x, n, out);
  return cudaGetLastError();
}

CudaError LaunchDequantizeFp8(const Fp8DequantArgs& a, Stream stream) {
  if (a.block_rows <= 0 || a.block_cols <= 0 || a.count < 0 || a.rows < 0 || a.cols < 0) {
    return cudaErrorInvalidValue;
  }
  const int64_t n = a.count * a.rows * a.cols;
  if (n == 0) return cudaSuccess;
  DequantizeFp8Kernel<<<Blocks((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace semmoe::kernels::cuda
