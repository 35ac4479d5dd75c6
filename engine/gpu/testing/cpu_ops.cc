#include "engine/gpu/testing/cpu_ops.h"

#include "Eigen/Core"
#include "kernels/cpu/forward_ops.h"
#include "kernels/cpu/grouped_swiglu.h"
#include "kernels/cpu/moe_routing.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/predict_devices.h"
#include "kernels/dtype.h"

namespace semmoe::engine::gpu::testing {
namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace

absl::Status CpuOps::Linear(const float* x, int64_t rows, const LinearView& w, float* y) {
  if (rows == 0) return absl::OkStatus();
  Eigen::Map<RowMajor> ym(y, rows, w.rows);
  if (w.w16 == nullptr) {
    Eigen::Map<const RowMajor> xm(x, rows, w.cols), wm(w.w, w.rows, w.cols);
    ym.noalias() = xm * wm.transpose();
    return absl::OkStatus();
  }
  // bf16 operands widen exactly to f32, so an f32 product of the widened values is a bf16
  // product with f32 accumulation.
  RowMajor xb(rows, w.cols), wb(w.rows, w.cols);
  for (int64_t i = 0; i < xb.size(); ++i) {
    xb.data()[i] = kernels::Bf16ToF32(kernels::F32ToBf16(x[i]));
  }
  for (int64_t i = 0; i < wb.size(); ++i)
    wb.data()[i] = kernels::Bf16ToF32(kernels::BF16{w.w16[i]});
  ym.noalias() = xb * wb.transpose();
  return absl::OkStatus();
}

absl::Status CpuOps::Copy2D(float* dst, int64_t dst_stride, const float* src, int64_t src_stride,
                            int64_t rows, int64_t width) {
  for (int64_t r = 0; r < rows; ++r) std::copy_n(src + r * src_stride, width, dst + r * dst_stride);
  return absl::OkStatus();
}

absl::Status CpuOps::HeadLinear(const kernels::HeadLinearArgs& a) {
  using Stride = Eigen::OuterStride<>;
  RowMajor x(a.rows, a.in), w;
  for (int h = 0; h < a.heads; ++h) {
    // The head's rows of x (rounded to bf16 for a bf16 product) and its matrix, widened to f32.
    for (int64_t r = 0; r < a.rows; ++r) {
      const float* from = a.x + r * a.x_row_stride + h * a.x_head_stride;
      for (int64_t i = 0; i < a.in; ++i) {
        x(r, i) = a.w16 != nullptr ? kernels::Bf16ToF32(kernels::F32ToBf16(from[i])) : from[i];
      }
    }
    const int64_t w_rows = a.transposed ? a.in : a.out, w_cols = a.transposed ? a.out : a.in;
    if (a.w16 != nullptr) {
      w.resize(w_rows, w_cols);
      const uint16_t* bits = a.w16 + h * a.w_head_stride;
      for (int64_t i = 0; i < w.size(); ++i) w.data()[i] = kernels::Bf16ToF32(kernels::BF16{bits[i]});
    } else {
      w = Eigen::Map<const RowMajor>(a.w + h * a.w_head_stride, w_rows, w_cols);
    }
    Eigen::Map<RowMajor, 0, Stride> y(a.y + h * a.y_head_stride, a.rows, a.out,
                                      Stride(a.y_row_stride));
    if (a.transposed) {
      y.noalias() = x * w;
    } else {
      y.noalias() = x * w.transpose();
    }
  }
  return absl::OkStatus();
}

absl::Status CpuOps::PartialRope(const kernels::PartialRopeArgs& a) {
  kernels::cpu::ApplyPartialRope(a);
  return absl::OkStatus();
}

absl::Status CpuOps::RoundToBf16(const float* x, int64_t n, uint16_t* out) {
  kernels::cpu::RoundToBf16(x, n, out);
  return absl::OkStatus();
}

absl::Status CpuOps::ShufflePack(const float* x, const int32_t* order, int64_t rows, int64_t width,
                                 float* packed) {
  kernels::cpu::ShufflePack(x, order, rows, width, packed);
  return absl::OkStatus();
}

absl::Status CpuOps::ShuffleUnpack(const float* packed, const int32_t* order, int64_t rows,
                                   int64_t width, float* x) {
  kernels::cpu::ShuffleUnpack(packed, order, rows, width, x);
  return absl::OkStatus();
}

absl::Status CpuOps::PredictDevices(const kernels::PredictDevicesArgs& a) {
  kernels::cpu::PredictDevices(a);
  return absl::OkStatus();
}

absl::Status CpuOps::GroupedSwiGlu(const kernels::GroupedSwiGluArgs& a) {
  kernels::GroupedSwiGluArgs args = a;
  args.bf16_activation = true;
  kernels::cpu::GroupedSwiGlu(args);
  return absl::OkStatus();
}

absl::Status CpuOps::RmsNorm(float* x, int64_t rows, int64_t width, int64_t stride,
                             const float* weight, float eps) {
  kernels::cpu::RmsNorm({x, rows, width, stride, weight, eps});
  return absl::OkStatus();
}

absl::Status CpuOps::QkNormRope(const kernels::QkNormRopeArgs& a) {
  if (a.norm_weight != nullptr) {  // Per head of each row, before RoPE.
    for (int64_t r = 0; r < a.rows; ++r) {
      kernels::cpu::RmsNorm(
          {a.x + r * a.row_stride, a.heads, a.head_dim, a.head_dim, a.norm_weight, a.eps});
    }
  }
  kernels::cpu::ApplyRope(
      {a.x, a.rows, a.row_stride, a.heads, a.head_dim, a.positions, a.cos, a.sin});
  return absl::OkStatus();
}

absl::Status CpuOps::SiluMul(float* gate, const float* up, int64_t n) {
  kernels::cpu::SiluMul(gate, up, n);
  return absl::OkStatus();
}

absl::Status CpuOps::AddInPlace(float* x, const float* y, int64_t n) {
  kernels::cpu::AddInPlace(x, y, n);
  return absl::OkStatus();
}

absl::Status CpuOps::AddRowBias(float* x, int64_t rows, int64_t width, int64_t stride,
                                const float* bias) {
  kernels::cpu::AddRowBias(x, rows, width, stride, bias);
  return absl::OkStatus();
}

absl::Status CpuOps::SigmoidGateAdd(float* out, const float* y, const float* gate, int64_t rows,
                                    int64_t width) {
  kernels::cpu::SigmoidGateAdd(out, y, gate, rows, width);
  return absl::OkStatus();
}

absl::Status CpuOps::GatherRowsByIndex(const float* table, const int32_t* index, int64_t rows,
                                       int64_t width, float* out) {
  kernels::cpu::GatherRowsByIndex(table, index, rows, width, out);
  return absl::OkStatus();
}

absl::Status CpuOps::StorePagedKv(const kernels::StorePagedKvArgs& a) {
  kernels::cpu::StorePagedKv(a);
  return absl::OkStatus();
}

absl::Status CpuOps::PagedAttention(const kernels::PagedAttentionArgs& a) {
  kernels::cpu::PagedAttention(a);
  return absl::OkStatus();
}

absl::Status CpuOps::RouterGating(const kernels::RouterGatingArgs& a) {
  kernels::cpu::RouterGating(a);
  return absl::OkStatus();
}

absl::Status CpuOps::PermuteByExpert(const kernels::PermuteByExpertArgs& a) {
  kernels::cpu::PermuteByExpert(a);
  return absl::OkStatus();
}

absl::Status CpuOps::GatherRows(const kernels::GatherRowsArgs& a) {
  kernels::cpu::GatherRows(a);
  return absl::OkStatus();
}

absl::Status CpuOps::CombineRows(const kernels::CombineRowsArgs& a) {
  kernels::cpu::CombineRows(a);
  return absl::OkStatus();
}

absl::Status CpuOps::ScatterAddRows(float* dst, const float* src, const int32_t* index,
                                    int64_t rows, int64_t width) {
  kernels::cpu::ScatterAddRows(dst, src, index, rows, width);
  return absl::OkStatus();
}

absl::Status CpuOps::Zero(float* x, int64_t n) {
  std::fill_n(x, n, 0.0f);
  return absl::OkStatus();
}

}  // namespace semmoe::engine::gpu::testing
