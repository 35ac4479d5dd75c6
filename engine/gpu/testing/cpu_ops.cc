#include "engine/gpu/testing/cpu_ops.h"

#include "Eigen/Core"
#include "kernels/cpu/moe_routing.h"
#include "kernels/cpu/nn_ops.h"

namespace semmoe::engine::gpu::testing {
namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace

absl::Status CpuOps::Linear(const float* x, int64_t rows, const LinearView& w, float* y) {
  if (rows == 0) return absl::OkStatus();
  Eigen::Map<const RowMajor> xm(x, rows, w.cols), wm(w.w, w.rows, w.cols);
  Eigen::Map<RowMajor> ym(y, rows, w.rows);
  ym.noalias() = xm * wm.transpose();
  return absl::OkStatus();
}

absl::Status CpuOps::RmsNorm(float* x, int64_t rows, int64_t width, int64_t stride,
                             const float* weight, float eps) {
  kernels::cpu::RmsNorm({x, rows, width, stride, weight, eps});
  return absl::OkStatus();
}

absl::Status CpuOps::QkNormRope(float* x, int64_t rows, int64_t stride, int heads, int head_dim,
                                const float* norm, float eps, const int32_t* positions,
                                const float* cos, const float* sin) {
  if (norm != nullptr) {  // Per head of each row, before RoPE.
    for (int64_t r = 0; r < rows; ++r) {
      kernels::cpu::RmsNorm({x + r * stride, heads, head_dim, head_dim, norm, eps});
    }
  }
  kernels::cpu::ApplyRope({x, rows, stride, heads, head_dim, positions, cos, sin});
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

absl::Status CpuOps::PermuteByExpert(const int32_t* ids, int64_t entries, int experts,
                                     int64_t* counts, int64_t* offsets, int64_t* entry_of_position,
                                     int64_t* position_of_entry) {
  kernels::cpu::PermuteByExpert({.ids = ids,
                                 .entries = entries,
                                 .experts = experts,
                                 .counts = counts,
                                 .offsets = offsets,
                                 .entry_of_position = entry_of_position,
                                 .position_of_entry = position_of_entry});
  return absl::OkStatus();
}

absl::Status CpuOps::GatherRows(const float* x, const int64_t* entry_of_position, int64_t entries,
                                int k, int64_t hidden, float* y) {
  kernels::cpu::GatherRows({.x = x,
                            .entry_of_position = entry_of_position,
                            .entries = entries,
                            .k = k,
                            .hidden = hidden,
                            .y = y});
  return absl::OkStatus();
}

absl::Status CpuOps::CombineRows(const float* y, const float* weights,
                                 const int64_t* position_of_entry, int64_t tokens, int k,
                                 int64_t hidden, float* out) {
  kernels::cpu::CombineRows({.y = y,
                             .weights = weights,
                             .position_of_entry = position_of_entry,
                             .tokens = tokens,
                             .k = k,
                             .hidden = hidden,
                             .out = out});
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
