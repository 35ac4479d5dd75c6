// The glue of a forward pass on the GPU (f32 rows in device memory); CPU references with the
// same arguments in kernels/cpu/forward_ops.h, compared by kernels/cuda/forward_ops_test. Each
// call enqueues on `stream` and returns the launch error without synchronising.
#ifndef SEMMOE_KERNELS_CUDA_FORWARD_OPS_H_
#define SEMMOE_KERNELS_CUDA_FORWARD_OPS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace semmoe::kernels::cuda {

// out[r] = table[index[r]]; table: [*, width], out: [rows, width].
cudaError_t LaunchGatherRowsByIndex(const float* table, const int32_t* index, int64_t rows,
                                    int64_t width, float* out, cudaStream_t stream);

// x[r] += bias for rows `row_stride` floats apart.
cudaError_t LaunchAddRowBias(float* x, int64_t rows, int64_t width, int64_t row_stride,
                             const float* bias, cudaStream_t stream);

// x += y over n floats.
cudaError_t LaunchAddInPlace(float* x, const float* y, int64_t n, cudaStream_t stream);

// out[r] += sigmoid(gate[r]) · y[r]; out, y: [rows, width]; gate: [rows].
cudaError_t LaunchSigmoidGateAdd(float* out, const float* y, const float* gate, int64_t rows,
                                 int64_t width, cudaStream_t stream);

// dst[index[r]] += src[r]; src: [rows, width]. REQUIRES distinct indices (no atomics).
cudaError_t LaunchScatterAddRows(float* dst, const float* src, const int32_t* index, int64_t rows,
                                 int64_t width, cudaStream_t stream);

// Row t of `rows` to cache[page_table[seq_of_token[t] · max_pages + position[t] / page_size]]
// [position[t] % page_size]; cache: [pages, page_size, width].
struct StorePagedKvArgs {
  const float* rows;  // [tokens, width]
  int64_t tokens;
  int64_t width;
  const int32_t* seq_of_token;
  const int32_t* position;
  const int32_t* page_table;  // [sequences, max_pages]
  int max_pages;
  int page_size;
  float* cache;
};
cudaError_t LaunchStorePagedKv(const StorePagedKvArgs& args, cudaStream_t stream);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_FORWARD_OPS_H_
