// y = x · wᵀ for activations x [m, in] and an HF linear weight w [out, in], picking the kernel
// by m: Eigen's blocked GEMM packs both operands on every call, which for the few rows of a
// decode step (or a rarely chosen expert) costs as much as the multiply itself; there the
// unpacked kernels/cpu/small_gemm (row·row dot products, contiguous in both) is faster.
#ifndef SEMMOE_ENGINE_MODEL_LINEAR_H_
#define SEMMOE_ENGINE_MODEL_LINEAR_H_

#include "engine/model/weights.h"
#include "kernels/cpu/small_gemm.h"

namespace semmoe::engine::model {

// Rows at or below which the unpacked product is used (measured on the shared model with
// tools:bench_forward; see docs/PERFORMANCE.md).
inline constexpr int kSmallGemmRows = 16;

inline void LinearInto(const Matrix& x, const LinearWeight& w, Matrix& y) {
  y.resize(x.rows(), w.rows());
  if (x.rows() > kSmallGemmRows) {
    y.noalias() = x * w.w.transpose();
  } else if (!w.bf16.empty()) {  // Same values, half the bytes (see LinearWeight).
    kernels::cpu::SmallGemmAbtBf16({x.data(), x.rows(), x.cols(), x.cols(), w.bf16.data(),
                                    w.rows(), w.cols(), y.data(), y.cols()});
  } else {
    kernels::cpu::SmallGemmAbt({x.data(), x.rows(), x.cols(), x.cols(), w.w.data(), w.rows(),
                                w.cols(), y.data(), y.cols()});
  }
}

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_MODEL_LINEAR_H_
