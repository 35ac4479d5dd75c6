// The glue of a forward pass on the GPU (f32 rows in device memory); CPU references with the
// same arguments in kernels/cpu/forward_ops.h, compared by kernels/cuda/forward_ops_test. Each
// call enqueues on `stream` and returns the launch error without synchronising.
#ifndef SEMMOE_KERNELS_CUDA_FORWARD_OPS_H_
#define SEMMOE_KERNELS_CUDA_FORWARD_OPS_H_

#include <cstdint>

#include "kernels/cuda/launch.h"
#include "kernels/op_args.h"

namespace semmoe::kernels::cuda {

// out[r] = table[index[r]]; table: [*, width], out: [rows, width].
CudaError LaunchGatherRowsByIndex(const float* table, const int32_t* index, int64_t rows,
                                  int64_t width, float* out, Stream stream);

// x[r] += bias for rows `row_stride` floats apart.
CudaError LaunchAddRowBias(float* x, int64_t rows, int64_t width, int64_t row_stride,
                           const float* bias, Stream stream);

// x += y over n floats.
CudaError LaunchAddInPlace(float* x, const float* y, int64_t n, Stream stream);

// out[r] += sigmoid(gate[r]) · y[r]; out, y: [rows, width]; gate: [rows].
CudaError LaunchSigmoidGateAdd(float* out, const float* y, const float* gate, int64_t rows,
                               int64_t width, Stream stream);

// dst[index[r]] += src[r]; src: [rows, width]. REQUIRES distinct indices (no atomics).
CudaError LaunchScatterAddRows(float* dst, const float* src, const int32_t* index, int64_t rows,
                               int64_t width, Stream stream);

// Row t of `rows` to cache[page_table[seq_of_token[t] · max_pages + position[t] / page_size]]
// [position[t] % page_size]; cache: [pages, page_size, width].
CudaError LaunchStorePagedKv(const StorePagedKvArgs& args, Stream stream);

// out[i] = x[i] as bf16 bits, rounded to nearest even (cpu::RoundToBf16).
CudaError LaunchRoundToBf16(const float* x, int64_t n, uint16_t* out, Stream stream);

// Block-scaled FP8 to bf16 bits (cpu::DequantizeFp8; kernels/op_args.h Fp8DequantArgs).
CudaError LaunchDequantizeFp8(const Fp8DequantArgs& args, Stream stream);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_FORWARD_OPS_H_
