// Dense f32 matrix multiply on the CPU (Eigen).
#ifndef SEMMOE_KERNELS_CPU_GEMM_H_
#define SEMMOE_KERNELS_CPU_GEMM_H_

#include "absl/status/status.h"
#include "kernels/tensor.h"

namespace semmoe::kernels::cpu {

// C = alpha * A · B + beta * C.
//
// Shapes: a [m, k], b [k, n], c [m, n]; all F32, any non-negative strides, so a transposed view
// (Tensor::Transpose) multiplies by the transpose without a copy — e.g. x · Wᵀ for an HF weight
// W of shape [out, in] is Gemm({x, *W.Transpose(0, 1), y}). With beta == 0, C's old contents are
// ignored (NaN in C does not leak in). C must not overlap A or B.
struct GemmArgs {
  const Tensor& a;
  const Tensor& b;
  Tensor& c;
  float alpha = 1.0f;
  float beta = 0.0f;
};

// InvalidArgument for a wrong rank, dtype, shape or an overlapping C. Thread-compatible: calls
// on disjoint outputs may run concurrently.
absl::Status Gemm(const GemmArgs& args);

}  // namespace semmoe::kernels::cpu

#endif  // SEMMOE_KERNELS_CPU_GEMM_H_
