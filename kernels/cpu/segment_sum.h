// Sum of G equal segments, element by element, in segment order: out[i] = Σ_s in[s·n + i].
// The CPU reference of kernels/cuda/segment_sum (a deterministic reduce-scatter's local half).
#ifndef SEMMOE_KERNELS_CPU_SEGMENT_SUM_H_
#define SEMMOE_KERNELS_CPU_SEGMENT_SUM_H_

#include <cstdint>

#include "kernels/op_args.h"

namespace semmoe::kernels::cpu {

inline void SegmentSum(const SegmentSumArgs& a) {
  for (int64_t i = 0; i < a.n; ++i) {
    float sum = 0.0f;
    for (int s = 0; s < a.segments; ++s) sum += a.in[s * a.n + i];
    a.out[i] = sum;
  }
}

}  // namespace semmoe::kernels::cpu

#endif  // SEMMOE_KERNELS_CPU_SEGMENT_SUM_H_
