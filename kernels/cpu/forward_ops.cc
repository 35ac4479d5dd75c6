#include "kernels/cpu/forward_ops.h"

#include <algorithm>
#include <cmath>

#include "kernels/dtype.h"

namespace semmoe::kernels::cpu {

void GatherRowsByIndex(const float* table, const int32_t* index, int64_t rows, int64_t width,
                       float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(table + static_cast<int64_t>(index[r]) * width, width, out + r * width);
  }
}

void AddRowBias(float* x, int64_t rows, int64_t width, int64_t row_stride, const float* bias) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < width; ++i) x[r * row_stride + i] += bias[i];
  }
}

void AddInPlace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void SigmoidGateAdd(float* out, const float* y, const float* gate, int64_t rows, int64_t width) {
  for (int64_t r = 0; r < rows; ++r) {
    const float g = 1.0f / (1.0f + std::exp(-gate[r]));
    for (int64_t i = 0; i < width; ++i) out[r * width + i] += g * y[r * width + i];
  }
}

void ScatterAddRows(float* dst, const float* src, const int32_t* index, int64_t rows,
                    int64_t width) {
  for (int64_t r = 0; r < rows; ++r) {
    float* d = dst + static_cast<int64_t>(index[r]) * width;
    for (int64_t i = 0; i < width; ++i) d[i] += src[r * width + i];
  }
}

void StorePagedKv(const StorePagedKvArgs& a) {
  for (int64_t t = 0; t < a.tokens; ++t) {
    const int64_t p = a.position[t];
    const int64_t page =
        a.page_table[static_cast<int64_t>(a.seq_of_token[t]) * a.max_pages + p / a.page_size];
    const int64_t at = (page * a.page_size + p % a.page_size) * a.width;
    if (a.cache16 != nullptr) {
      RoundToBf16(a.rows + t * a.width, a.width, a.cache16 + at);
    } else {
      std::copy_n(a.rows + t * a.width, a.width, a.cache + at);
    }
  }
}

void RoundToBf16(const float* x, int64_t n, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = F32ToBf16(x[i]).bits;
}

void DequantizeFp8(const Fp8DequantArgs& a) {
  float decoded[256];
  for (int c = 0; c < 256; ++c) decoded[c] = F8E4M3ToF32(F8E4M3{static_cast<uint8_t>(c)});
  const int64_t sr = (a.rows + a.block_rows - 1) / a.block_rows;
  const int64_t sc = (a.cols + a.block_cols - 1) / a.block_cols;
  for (int64_t m = 0; m < a.count; ++m) {
    const uint8_t* codes = a.codes + m * a.rows * a.cols;
    const float* scales = a.scales + m * sr * sc;
    uint16_t* out = a.out + m * a.rows * a.cols;
    for (int64_t i = 0; i < a.rows; ++i) {
      const float* row_scales = scales + (i / a.block_rows) * sc;
      for (int64_t j = 0; j < a.cols; ++j) {
        out[i * a.cols + j] =
            F32ToBf16(decoded[codes[i * a.cols + j]] * row_scales[j / a.block_cols]).bits;
      }
    }
  }
}

}  // namespace semmoe::kernels::cpu
