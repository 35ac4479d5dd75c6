// Sum of G equal segments, element by element, in segment order: out[i] = Σ_s in[s·n + i].
// The CPU reference of kernels/cuda/segment_sum (a deterministic reduce-scatter's local half).
#ifndef SEMMOE_KERNELS_CPU_SEGMENT_SUM_H_
#define SEMMOE_KERNELS_CPU_SEGMENT_SUM_H_

#include <cstdint>

namespace semmoe::kernels::cpu {

// in: [segments, n]; out: [n] (may not alias `in`).
inline void SegmentSum(const float* in, int segments, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    float sum = 0.0f;
    for (int s = 0; s < segments; ++s) sum += in[s * n + i];
    out[i] = sum;
  }
}

}  // namespace semmoe::kernels::cpu

#endif  // SEMMOE_KERNELS_CPU_SEGMENT_SUM_H_
