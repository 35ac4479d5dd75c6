#include "kernels/cpu/nn_ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace semmoe::kernels::cpu {

void RmsNorm(const RmsNormArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    float* x = a.x + r * a.row_stride;
    float sum = 0.0f;
    for (int64_t i = 0; i < a.width; ++i) sum += x[i] * x[i];
    const float scale = 1.0f / std::sqrt(sum / static_cast<float>(a.width) + a.eps);
    for (int64_t i = 0; i < a.width; ++i) x[i] = a.weight[i] * (x[i] * scale);
  }
}

std::vector<float> RopeInvFreq(int dim, double theta) {
  // HF computes inv_freq in f32 from theta^(2i/d); match that rounding.
  std::vector<float> inv_freq(dim / 2);
  for (int i = 0; i < dim / 2; ++i) {
    inv_freq[i] = static_cast<float>(1.0 / std::pow(theta, static_cast<double>(2 * i) / dim));
  }
  return inv_freq;
}

void RopeTables(int max_position, int head_dim, double theta, float* cos, float* sin) {
  RopeTablesFromInvFreq(max_position, RopeInvFreq(head_dim, theta), 1.0f, cos, sin);
}

void ApplyRope(const RopeArgs& a) {
  const int half = a.head_dim / 2;
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* c = a.cos + static_cast<int64_t>(a.positions[r]) * half;
    const float* s = a.sin + static_cast<int64_t>(a.positions[r]) * half;
    for (int h = 0; h < a.heads; ++h) {
      float* x = a.x + r * a.row_stride + static_cast<int64_t>(h) * a.head_dim;
      for (int i = 0; i < half; ++i) {
        const float x1 = x[i], x2 = x[i + half];
        x[i] = x1 * c[i] - x2 * s[i];
        x[i + half] = x2 * c[i] + x1 * s[i];
      }
    }
  }
}

void ApplyPartialRope(const PartialRopeArgs& a) {
  const int half = a.rope_dim / 2;
  // Interleaved: the pair of frequency i is (2i, 2i+1); halves: (i, i + half).
  const int first_step = a.interleaved ? 2 : 1;
  const int second_offset = a.interleaved ? 1 : half;
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* c = a.cos + static_cast<int64_t>(a.positions[r]) * half;
    const float* s = a.sin + static_cast<int64_t>(a.positions[r]) * half;
    for (int h = 0; h < a.heads; ++h) {
      float* x = a.x + r * a.row_stride + h * a.head_stride;
      for (int i = 0; i < half; ++i) {
        float* x1 = x + i * first_step;
        float* x2 = x1 + second_offset;
        const float v1 = *x1, v2 = *x2;
        *x1 = v1 * c[i] - v2 * s[i];
        *x2 = v2 * c[i] + v1 * s[i];
      }
    }
  }
}

void RopeTablesFromInvFreq(int max_position, absl::Span<const float> inv_freq, float scale,
                           float* cos, float* sin) {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  for (int p = 0; p < max_position; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(static_cast<float>(p) * inv_freq[i]);
      cos[p * half + i] = static_cast<float>(std::cos(angle)) * scale;
      sin[p * half + i] = static_cast<float>(std::sin(angle)) * scale;
    }
  }
}

void CausalSoftmax(const CausalSoftmaxArgs& a) {
  for (int64_t t = 0; t < a.rows; ++t) {
    float* row = a.scores + t * a.row_stride;
    const int64_t visible = std::min(a.cols, a.start + t + 1);
    Softmax(absl::Span<float>(row, visible));
    std::fill(row + visible, row + a.cols, 0.0f);
  }
}

void SiluMul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void Softmax(absl::Span<float> row) {
  if (row.empty()) return;
  const float max = *std::max_element(row.begin(), row.end());
  float sum = 0.0f;
  for (float& v : row) {
    v = std::exp(v - max);
    sum += v;
  }
  const float inv = 1.0f / sum;
  for (float& v : row) v *= inv;
}

void TopK(absl::Span<const float> values, int k, int32_t* out_ids, float* out_values) {
  // k is small (≤ 16 in practice): a partial insertion keeps it O(n·k) with no allocation.
  int filled = 0;
  for (int32_t i = 0; i < static_cast<int32_t>(values.size()); ++i) {
    const float v = values[i];
    if (filled == k && !(v > out_values[k - 1])) continue;
    int at = filled < k ? filled++ : k - 1;
    while (at > 0 && v > out_values[at - 1]) {
      out_values[at] = out_values[at - 1];
      out_ids[at] = out_ids[at - 1];
      --at;
    }
    out_values[at] = v;
    out_ids[at] = i;
  }
}

}  // namespace semmoe::kernels::cpu
