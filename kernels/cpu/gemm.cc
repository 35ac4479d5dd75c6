#include "kernels/cpu/gemm.h"

#include <cstdint>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"

namespace semmoe::kernels::cpu {
namespace {

using MatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using DynamicStride = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
using ConstMap = Eigen::Map<const MatrixF, Eigen::Unaligned, DynamicStride>;
using MutableMap = Eigen::Map<MatrixF, Eigen::Unaligned, DynamicStride>;

absl::Status CheckMatrix(const Tensor& t, const char* name) {
  if (t.rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("gemm: ", name, " must be a matrix, got ", t.DebugString()));
  }
  if (t.dtype() != DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat("gemm: ", name, " must be F32, got ", t.DebugString()));
  }
  return absl::OkStatus();
}

// [first, last) bytes an F32 matrix can touch.
std::pair<uintptr_t, uintptr_t> ByteRange(const Tensor& t) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(t.raw_data());
  if (t.numel() == 0) return {begin, begin};
  const int64_t last = t.strides()[0] * (t.dim(0) - 1) + t.strides()[1] * (t.dim(1) - 1);
  return {begin, begin + (last + 1) * sizeof(float)};
}

bool Overlap(const Tensor& x, const Tensor& y) {
  const auto [x0, x1] = ByteRange(x);
  const auto [y0, y1] = ByteRange(y);
  return x0 < y1 && y0 < x1;
}

ConstMap MapOf(const Tensor& t) {
  return ConstMap(t.data<float>(), t.dim(0), t.dim(1), DynamicStride(t.strides()[0], t.strides()[1]));
}

}  // namespace

absl::Status Gemm(const GemmArgs& args) {
  for (auto [t, name] : {std::pair<const Tensor*, const char*>{&args.a, "a"},
                         {&args.b, "b"},
                         {&args.c, "c"}}) {
    if (absl::Status s = CheckMatrix(*t, name); !s.ok()) return s;
  }
  const int64_t m = args.a.dim(0), k = args.a.dim(1), n = args.b.dim(1);
  if (args.b.dim(0) != k || args.c.dim(0) != m || args.c.dim(1) != n) {
    return absl::InvalidArgumentError(absl::StrCat("gemm: shapes do not chain: a ",
                                                   args.a.DebugString(), " · b ",
                                                   args.b.DebugString(), " -> c ",
                                                   args.c.DebugString()));
  }
  if (Overlap(args.c, args.a) || Overlap(args.c, args.b)) {
    return absl::InvalidArgumentError("gemm: c overlaps an input");
  }
  if (m == 0 || n == 0) return absl::OkStatus();

  MutableMap c(args.c.data<float>(), m, n, DynamicStride(args.c.strides()[0], args.c.strides()[1]));
  if (k == 0) {
    if (args.beta == 0.0f) {
      c.setZero();
    } else {
      c *= args.beta;
    }
    return absl::OkStatus();
  }
  const ConstMap a = MapOf(args.a);
  const ConstMap b = MapOf(args.b);
  if (args.beta == 0.0f) {
    c.noalias() = args.alpha * (a * b);
  } else {
    c *= args.beta;
    c.noalias() += args.alpha * (a * b);
  }
  return absl::OkStatus();
}

}  // namespace semmoe::kernels::cpu
