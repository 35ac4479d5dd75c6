#include "engine/forward/cpu_ops.h"

#include <algorithm>
#include <vector>

#include "Eigen/Core"
#include "kernels/cpu/forward_ops.h"
#include "kernels/cpu/grouped_swiglu.h"
#include "kernels/cpu/moe_routing.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/predict_devices.h"
#include "kernels/cpu/small_gemm.h"
#include "kernels/dtype.h"

namespace semmoe::engine::forward {
namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Rows at or below which an f32 product skips Eigen's packing: Eigen's blocked GEMM packs both
// operands on every call, which for the few rows of a decode step (or a rarely chosen expert)
// costs as much as the multiply itself (measured with tools/bench_forward).
constexpr int64_t kSmallGemmRows = 16;
// Runs of at most this many new tokens of a sequence (a decode step) attend token by token.
constexpr int64_t kDirectAttentionTokens = 4;
// Query rows a longer run's attention takes at a time (GemmAttention).
constexpr int64_t kCausalBlockTokens = 32;
// From this many query heads per KV head such a run attends through products over the group
// (each key read once for the group: MLA's one latent head); fewer take the per-token kernel,
// which is faster there in the AVX2 build (tools/bench_op_set at 0b1ac06, --config=opt:
// qwen3-moe-a's groups of 2 decode at 0.93x of the kernel through the products, deepseek-v3-tiny's
// 8 at 1.03-1.07x).
constexpr int kGroupedQueryHeads = 4;

}  // namespace

absl::Status CpuOps::Linear(const float* x, int64_t rows, const LinearView& w, float* y) {
  if (rows == 0) return absl::OkStatus();
  Eigen::Map<RowMajor> ym(y, rows, w.rows);
  if (w.w16 == nullptr && rows <= kSmallGemmRows) {  // Unpacked: see kernels/cpu/small_gemm.h.
    if (w.exact16 != nullptr) {
      kernels::cpu::SmallGemmAbtBf16(
          {x, rows, w.cols, w.cols, w.exact16, w.rows, w.cols, y, w.rows});
    } else {
      kernels::cpu::SmallGemmAbt({x, rows, w.cols, w.cols, w.w, w.rows, w.cols, y, w.rows});
    }
    return absl::OkStatus();
  }
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
  const int64_t w_rows = a.transposed ? a.in : a.out, w_cols = a.transposed ? a.out : a.in;
  RowMajor xb, wb;  // bf16: the head's rows of x rounded to bf16 and its matrix, widened to f32.
  for (int h = 0; h < a.heads; ++h) {
    Eigen::Map<const RowMajor, 0, Stride> x(a.x + h * a.x_head_stride, a.rows, a.in,
                                            Stride(a.x_row_stride));
    Eigen::Map<RowMajor, 0, Stride> y(a.y + h * a.y_head_stride, a.rows, a.out,
                                      Stride(a.y_row_stride));
    auto product = [&](const auto& xm, const auto& wm) {
      if (a.transposed) {
        y.noalias() = xm * wm;
      } else {
        y.noalias() = xm * wm.transpose();
      }
    };
    if (a.w16 == nullptr) {  // f32: the operands in place.
      product(x, Eigen::Map<const RowMajor>(a.w + h * a.w_head_stride, w_rows, w_cols));
      continue;
    }
    xb = x.unaryExpr([](float v) { return kernels::Bf16ToF32(kernels::F32ToBf16(v)); });
    wb.resize(w_rows, w_cols);
    const uint16_t* bits = a.w16 + h * a.w_head_stride;
    for (int64_t i = 0; i < wb.size(); ++i)
      wb.data()[i] = kernels::Bf16ToF32(kernels::BF16{bits[i]});
    product(xb, wb);
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

absl::Status CpuOps::DequantizeFp8(const kernels::Fp8DequantArgs& a) {
  kernels::cpu::DequantizeFp8(a);
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

namespace {

// A sequence's context [0, context) of the cache `cache` (rows of `row` floats: all KV heads) as
// contiguous rows: in place when its slots are consecutive (one-position pages over a pass's
// rows: MLA's expanded form), else gathered from the pages into `buffer`.
const float* Context(const kernels::PagedAttentionArgs& a, const float* cache, int64_t row,
                     int64_t t, int64_t context, std::vector<float>& buffer) {
  const int32_t* pages = a.page_table + int64_t{a.seq_of_token[t]} * a.max_pages;
  auto slot = [&](int64_t p) {
    return int64_t{pages[p / a.page_size]} * a.page_size + p % a.page_size;
  };
  const int64_t first = slot(0);
  bool consecutive = true;
  for (int64_t p = a.page_size; p < context && consecutive; p += a.page_size) {
    consecutive = slot(p) == first + p;
  }
  if (consecutive) return cache + first * row;
  buffer.resize(context * row);
  for (int64_t p = 0; p < context; ++p) {
    std::copy_n(cache + slot(p) * row, row, buffer.data() + p * row);
  }
  return buffer.data();
}

// One sequence's run of `n` consecutive new tokens from batch token `t`: scores = q·Kᵀ·scale,
// the causal softmax, out = scores·V as GEMMs over its context (Context). A run of more than
// kDirectAttentionTokens tokens (a prefill or a chunk) takes one product per head over the whole
// run; a shorter one (a decode step) whose KV heads serve kGroupedQueryHeads or more query heads
// one product per token and KV head with the group's query heads as the rows, so each key is
// read once for the group (MLA: once for every head).
void GemmAttention(const kernels::PagedAttentionArgs& a, int64_t t, int64_t n) {
  const int group = a.q_heads / a.kv_heads, hd = a.head_dim, vd = a.value_dim();
  const int64_t q_row = int64_t{a.q_heads} * hd, out_row = int64_t{a.q_heads} * vd;
  const int64_t row = int64_t{a.kv_heads} * hd, v_row = int64_t{a.kv_heads} * vd;
  const int64_t start = a.position[t], context = a.position[t + n - 1] + 1;
  thread_local std::vector<float> key_buffer, value_buffer;
  const float* k = Context(a, a.k_cache, row, t, context, key_buffer);
  const float* v = a.v_cache == a.k_cache && vd == hd
                       ? k
                       : Context(a, a.v_cache, v_row, t, context, value_buffer);
  const Eigen::Map<const RowMajor> keys(k, context, row), values(v, context, v_row);
  RowMajor scores;
  using Stride = Eigen::OuterStride<>;
  if (n > kDirectAttentionTokens) {
    // Blocks of kCausalBlockTokens rows, each over the context its last row sees: the
    // products skip most of what the causal mask would zero.
    for (int64_t i0 = 0; i0 < n; i0 += kCausalBlockTokens) {
      const int64_t rows = std::min(kCausalBlockTokens, n - i0);
      const int64_t seen = a.position[t + i0 + rows - 1] + 1;
      for (int h = 0; h < a.q_heads; ++h) {
        const int64_t kv = int64_t{h / group};
        Eigen::Map<const RowMajor, 0, Stride> q(a.q + (t + i0) * q_row + int64_t{h} * hd, rows, hd,
                                                Stride(q_row));
        Eigen::Map<RowMajor, 0, Stride> out(a.out + (t + i0) * out_row + int64_t{h} * vd, rows, vd,
                                            Stride(out_row));
        scores.noalias() = (a.scale * q) * keys.block(0, kv * hd, seen, hd).transpose();
        kernels::cpu::CausalSoftmax({scores.data(), rows, seen, seen, start + i0});
        out.noalias() = scores * values.block(0, kv * vd, seen, vd);
      }
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t seen = a.position[t + i] + 1;  // This token's context.
    for (int g = 0; g < a.kv_heads; ++g) {
      Eigen::Map<const RowMajor> q(a.q + (t + i) * q_row + int64_t{g} * group * hd, group, hd);
      Eigen::Map<RowMajor> out(a.out + (t + i) * out_row + int64_t{g} * group * vd, group, vd);
      scores.noalias() = (a.scale * q) * keys.block(0, int64_t{g} * hd, seen, hd).transpose();
      for (int r = 0; r < group; ++r) {
        kernels::cpu::Softmax(absl::Span<float>(scores.row(r).data(), static_cast<size_t>(seen)));
      }
      out.noalias() = scores * values.block(0, int64_t{g} * vd, seen, vd);
    }
  }
}

}  // namespace

absl::Status CpuOps::PagedAttention(const kernels::PagedAttentionArgs& a) {
  if (a.k_cache16 != nullptr) {  // The bf16 cache: the kernel's reference, token by token.
    kernels::cpu::PagedAttention(a);
    return absl::OkStatus();
  }
  const int64_t q_row = int64_t{a.q_heads} * a.head_dim;
  const bool grouped = a.q_heads / a.kv_heads >= kGroupedQueryHeads;
  for (int64_t t = 0, end = 0; t < a.tokens; t = end) {
    end = t + 1;  // The run of the same sequence's consecutive positions.
    while (end < a.tokens && a.seq_of_token[end] == a.seq_of_token[t] &&
           a.position[end] == a.position[end - 1] + 1) {
      ++end;
    }
    if (end - t > kDirectAttentionTokens || grouped) {
      GemmAttention(a, t, end - t);
      continue;
    }
    kernels::PagedAttentionArgs run = a;
    run.q += t * q_row;
    run.out += t * int64_t{a.q_heads} * a.value_dim();
    run.tokens = end - t;
    run.seq_of_token += t;
    run.position += t;
    kernels::cpu::PagedAttention(run);
  }
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

}  // namespace semmoe::engine::forward
