#include "kernels/cpu/gemm.h"

#include <cmath>
#include <limits>
#include <random>
#include <tuple>

#include "gtest/gtest.h"

namespace semmoe::kernels::cpu {
namespace {

Tensor Random(std::vector<int64_t> shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t = *Tensor::Zeros(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

float At(const Tensor& t, int64_t i, int64_t j) { return t.data<float>()[*t.Offset({i, j})]; }

// Naive reference in double precision.
void ExpectMatchesReference(const Tensor& a, const Tensor& b, const Tensor& c_before,
                            const Tensor& c, float alpha, float beta) {
  for (int64_t i = 0; i < c.dim(0); ++i) {
    for (int64_t j = 0; j < c.dim(1); ++j) {
      double sum = 0;
      for (int64_t p = 0; p < a.dim(1); ++p) sum += double{At(a, i, p)} * At(b, p, j);
      const double expected = alpha * sum + (beta == 0 ? 0.0 : beta * At(c_before, i, j));
      ASSERT_NEAR(At(c, i, j), expected, 1e-4 * (1 + a.dim(1))) << "at " << i << "," << j;
    }
  }
}

class GemmShapeTest : public testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(GemmShapeTest, MatchesNaiveReference) {
  const auto [m, k, n] = GetParam();
  std::mt19937 rng(m * 10007 + k * 101 + n);
  Tensor a = Random({m, k}, rng);
  Tensor b = Random({k, n}, rng);
  Tensor c = Random({m, n}, rng);
  Tensor c_before = c.Clone();
  ASSERT_TRUE(Gemm({.a = a, .b = b, .c = c}).ok());
  ExpectMatchesReference(a, b, c_before, c, 1.0f, 0.0f);

  Tensor c2 = c_before.Clone();
  ASSERT_TRUE(Gemm({.a = a, .b = b, .c = c2, .alpha = 0.5f, .beta = 2.0f}).ok());
  ExpectMatchesReference(a, b, c_before, c2, 0.5f, 2.0f);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmShapeTest,
                         testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(1, 64, 96),
                                         std::make_tuple(7, 13, 5), std::make_tuple(33, 65, 17),
                                         std::make_tuple(128, 64, 256)));

TEST(GemmTest, TransposedAndSlicedViewsNeedNoCopy) {
  std::mt19937 rng(3);
  Tensor x = Random({9, 24}, rng);
  Tensor w = Random({16, 24}, rng);  // HF layout [out, in].
  Tensor y = *Tensor::Zeros(DType::kF32, {9, 16});
  Tensor wt = *w.Transpose(0, 1);
  ASSERT_TRUE(Gemm({.a = x, .b = wt, .c = y}).ok());
  ExpectMatchesReference(x, wt, y, y, 1.0f, 0.0f);

  // Columns 4..12 of x times rows 4..12 of wt, into a column slice of a wider output.
  Tensor x_cols = *x.Slice(1, 4, 12);
  Tensor wt_rows = *wt.Slice(0, 4, 12);
  Tensor wide = *Tensor::Zeros(DType::kF32, {9, 20});
  Tensor out = *wide.Slice(1, 2, 18);
  ASSERT_TRUE(Gemm({.a = x_cols, .b = wt_rows, .c = out}).ok());
  ExpectMatchesReference(x_cols, wt_rows, out, out, 1.0f, 0.0f);
  EXPECT_EQ(At(wide, 0, 0), 0.0f);  // Outside the slice: untouched.
  EXPECT_EQ(At(wide, 8, 19), 0.0f);
}

TEST(GemmTest, BetaZeroIgnoresNanInOutput) {
  std::mt19937 rng(5);
  Tensor a = Random({3, 4}, rng);
  Tensor b = Random({4, 2}, rng);
  Tensor c = *Tensor::Zeros(DType::kF32, {3, 2});
  for (int i = 0; i < 6; ++i) c.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(Gemm({.a = a, .b = b, .c = c}).ok());
  for (int i = 0; i < 6; ++i) EXPECT_FALSE(std::isnan(c.data<float>()[i]));
}

TEST(GemmTest, EmptyInnerDimensionScalesOrZeroes) {
  Tensor a = *Tensor::Zeros(DType::kF32, {2, 0});
  Tensor b = *Tensor::Zeros(DType::kF32, {0, 3});
  Tensor c = *Tensor::Zeros(DType::kF32, {2, 3});
  for (int i = 0; i < 6; ++i) c.data<float>()[i] = 2.0f;
  ASSERT_TRUE(Gemm({.a = a, .b = b, .c = c, .beta = 0.5f}).ok());
  EXPECT_EQ(c.data<float>()[5], 1.0f);
  ASSERT_TRUE(Gemm({.a = a, .b = b, .c = c}).ok());
  EXPECT_EQ(c.data<float>()[5], 0.0f);
}

TEST(GemmTest, RejectsBadArguments) {
  Tensor a = *Tensor::Zeros(DType::kF32, {2, 3});
  Tensor b = *Tensor::Zeros(DType::kF32, {3, 4});
  Tensor c = *Tensor::Zeros(DType::kF32, {2, 4});
  Tensor wrong_c = *Tensor::Zeros(DType::kF32, {2, 5});
  Tensor bf16 = *Tensor::Zeros(DType::kBF16, {3, 4});
  Tensor vector = *Tensor::Zeros(DType::kF32, {3});
  EXPECT_EQ(Gemm({.a = a, .b = b, .c = wrong_c}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Gemm({.a = a, .b = bf16, .c = c}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Gemm({.a = a, .b = vector, .c = c}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Gemm({.a = b, .b = a, .c = c}).code(), absl::StatusCode::kInvalidArgument);

  Tensor square = *Tensor::Zeros(DType::kF32, {4, 4});
  absl::Status aliased = Gemm({.a = square, .b = square, .c = square});
  EXPECT_EQ(aliased.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(aliased.message().find("overlaps"), absl::string_view::npos);
}

}  // namespace
}  // namespace semmoe::kernels::cpu
