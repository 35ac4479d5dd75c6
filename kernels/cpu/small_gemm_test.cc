#include "kernels/cpu/small_gemm.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace semmoe::kernels::cpu {
namespace {

TEST(SmallGemmTest, MatchesNaiveForOddShapesAndStrides) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t m : {1, 2, 3, 8, 17}) {
    for (int64_t n : {1, 4, 7, 33}) {
      for (int64_t k : {1, 8, 13, 64, 130}) {
        const int64_t lda = k + 3, ldb = k + 1, ldc = n + 2;
        std::vector<float> a(m * lda), b(n * ldb), c(m * ldc, NAN);
        for (float& x : a) x = u(rng);
        for (float& x : b) x = u(rng);
        SmallGemmAbt({a.data(), m, k, lda, b.data(), n, ldb, c.data(), ldc});
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double ref = 0;
            for (int64_t p = 0; p < k; ++p) ref += double(a[i * lda + p]) * b[j * ldb + p];
            ASSERT_NEAR(c[i * ldc + j], ref, 1e-4) << m << "x" << n << "x" << k;
          }
        }
      }
    }
  }
}

TEST(SmallGemmTest, DotAndAxpy) {
  std::vector<float> a(19), b(19), y(19, 1.0f);
  double ref = 0;
  for (int i = 0; i < 19; ++i) a[i] = i * 0.5f, b[i] = 1.0f - i * 0.1f, ref += a[i] * b[i];
  EXPECT_NEAR(Dot(a.data(), b.data(), 19), ref, 1e-4);
  Axpy(2.0f, a.data(), y.data(), 19);
  for (int i = 0; i < 19; ++i) EXPECT_FLOAT_EQ(y[i], 1.0f + 2.0f * a[i]);
}

}  // namespace
}  // namespace semmoe::kernels::cpu
