#include "kernels/cpu/small_gemm.h"

#include <cstring>

namespace semmoe::kernels::cpu {
namespace {

using internal::v8f;
inline v8f Load(const float* p) { return internal::Load8(p); }
inline float Sum(v8f v) { return internal::Sum8(v); }

// C[i0..i0+R) × [j0..j0+4) for R ∈ {1, 2}.
template <int R>
void Block(const SmallGemmArgs& g, int64_t i0, int64_t j0) {
  const int64_t k8 = g.k / 8 * 8;
  v8f acc[R][4] = {};
  const float* a[R];
  for (int r = 0; r < R; ++r) a[r] = g.a + (i0 + r) * g.lda;
  const float* b0 = g.b + j0 * g.ldb;
  const float* b1 = b0 + g.ldb;
  const float* b2 = b1 + g.ldb;
  const float* b3 = b2 + g.ldb;
  for (int64_t p = 0; p < k8; p += 8) {
    const v8f w0 = Load(b0 + p), w1 = Load(b1 + p), w2 = Load(b2 + p), w3 = Load(b3 + p);
    for (int r = 0; r < R; ++r) {
      const v8f x = Load(a[r] + p);
      acc[r][0] += x * w0;
      acc[r][1] += x * w1;
      acc[r][2] += x * w2;
      acc[r][3] += x * w3;
    }
  }
  for (int r = 0; r < R; ++r) {
    float out[4] = {Sum(acc[r][0]), Sum(acc[r][1]), Sum(acc[r][2]), Sum(acc[r][3])};
    for (int64_t p = k8; p < g.k; ++p) {
      out[0] += a[r][p] * b0[p];
      out[1] += a[r][p] * b1[p];
      out[2] += a[r][p] * b2[p];
      out[3] += a[r][p] * b3[p];
    }
    std::memcpy(g.c + (i0 + r) * g.ldc + j0, out, sizeof(out));
  }
}

}  // namespace

void SmallGemmAbt(const SmallGemmArgs& g) {
  const int64_t n4 = g.n / 4 * 4;
  for (int64_t j = 0; j < n4; j += 4) {
    int64_t i = 0;
    for (; i + 2 <= g.m; i += 2) Block<2>(g, i, j);
    if (i < g.m) Block<1>(g, i, j);
  }
  for (int64_t j = n4; j < g.n; ++j) {
    for (int64_t i = 0; i < g.m; ++i) {
      g.c[i * g.ldc + j] = Dot(g.a + i * g.lda, g.b + j * g.ldb, g.k);
    }
  }
}

}  // namespace semmoe::kernels::cpu
