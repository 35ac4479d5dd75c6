#include "kernels/cpu/gemm.h"

#include <cstdint>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace semmoe::kernels::cpu {
namespace {

using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using AnyStride = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
using RowMap = Eigen::Map<const RowMajorF, Eigen::Unaligned, Eigen::OuterStride<>>;
using ColMap = Eigen::Map<const ColMajorF, Eigen::Unaligned, Eigen::OuterStride<>>;
using AnyMap = Eigen::Map<const RowMajorF, Eigen::Unaligned, AnyStride>;
using MutableMap = Eigen::Map<RowMajorF, Eigen::Unaligned, AnyStride>;
using MutableRowMap = Eigen::Map<RowMajorF, Eigen::Unaligned, Eigen::OuterStride<>>;

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

// Calls fn with the fastest Eigen view of `t`: row-major or column-major with an outer stride
// (what Eigen's blocked product is built for; a transposed weight is column-major), or fully
// strided as the general case.
template <typename Fn>
void WithMap(const Tensor& t, Fn&& fn) {
  const float* data = t.data<float>();
  const int64_t rows = t.dim(0), cols = t.dim(1);
  const int64_t s0 = t.strides()[0], s1 = t.strides()[1];
  if (s1 == 1 && s0 >= cols) {
    fn(RowMap(data, rows, cols, Eigen::OuterStride<>(s0)));
  } else if (s0 == 1 && s1 >= rows) {
    fn(ColMap(data, rows, cols, Eigen::OuterStride<>(s1)));
  } else {
    fn(AnyMap(data, rows, cols, AnyStride(s0, s1)));
  }
}

}  // namespace

absl::Status Gemm(const GemmArgs& args) {
  for (auto [t, name] :
       {std::pair<const Tensor*, const char*>{&args.a, "a"}, {&args.b, "b"}, {&args.c, "c"}}) {
    RETURN_IF_ERROR(CheckMatrix(*t, name));
  }
  const int64_t m = args.a.dim(0), k = args.a.dim(1), n = args.b.dim(1);
  if (args.b.dim(0) != k || args.c.dim(0) != m || args.c.dim(1) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("gemm: shapes do not chain: a ", args.a.DebugString(), " · b ",
                     args.b.DebugString(), " -> c ", args.c.DebugString()));
  }
  if (Overlap(args.c, args.a) || Overlap(args.c, args.b)) {
    return absl::InvalidArgumentError("gemm: c overlaps an input");
  }
  if (m == 0 || n == 0) return absl::OkStatus();

  auto run = [&](auto c) {
    if (args.beta == 0.0f) {
      c.setZero();  // Not c *= 0: NaN in the old contents must not survive.
    } else if (args.beta != 1.0f) {
      c *= args.beta;
    }
    if (k == 0) return;
    WithMap(args.a, [&](const auto& a) {
      WithMap(args.b, [&](const auto& b) { c.noalias() += args.alpha * (a * b); });
    });
  };
  float* c_data = args.c.data<float>();
  const int64_t c0 = args.c.strides()[0], c1 = args.c.strides()[1];
  if (c1 == 1 && c0 >= n) {
    run(MutableRowMap(c_data, m, n, Eigen::OuterStride<>(c0)));
  } else {
    run(MutableMap(c_data, m, n, AnyStride(c0, c1)));
  }
  return absl::OkStatus();
}

}  // namespace semmoe::kernels::cpu
