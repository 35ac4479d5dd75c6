#include "kernels/cpu/small_gemm.h"

#include <cmath>
#include <cstring>
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

// bf16 B gives bit-identical results to the f32 kernel on the widened values.
TEST(SmallGemmTest, Bf16MatchesF32OnTheSameValuesExactly) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t m : {1, 2, 3, 5, 16}) {
    for (int64_t n : {1, 3, 4, 9, 128}) {
      for (int64_t k : {7, 8, 64, 257}) {
        std::vector<float> a(m * k), bf(n * k), c1(m * n), c2(m * n);
        std::vector<uint16_t> bb(n * k);
        for (float& x : a) x = u(rng);
        for (int64_t i = 0; i < n * k; ++i) {
          float v = u(rng);
          uint32_t bits;
          std::memcpy(&bits, &v, 4);
          bb[i] = static_cast<uint16_t>(bits >> 16);  // Truncate: any bf16 value will do.
          bits = static_cast<uint32_t>(bb[i]) << 16;
          std::memcpy(&bf[i], &bits, 4);
        }
        SmallGemmAbt({a.data(), m, k, k, bf.data(), n, k, c1.data(), n});
        SmallGemmAbtBf16({a.data(), m, k, k, bb.data(), n, k, c2.data(), n});
        ASSERT_EQ(c1, c2) << m << "x" << n << "x" << k;
      }
    }
  }
}

TEST(SmallGemmTest, NoRowsIsANoOp) {
  std::vector<float> b(8 * 4, 1.0f);
  std::vector<uint16_t> bb(8 * 4, 0x3f80);
  SmallGemmAbt({nullptr, 0, 8, 8, b.data(), 4, 8, nullptr, 4});
  SmallGemmAbtBf16({nullptr, 0, 8, 8, bb.data(), 4, 8, nullptr, 4});
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
