#include "kernels/cpu/small_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace semmoe::kernels::cpu {
namespace {

using internal::v8f;
inline v8f Load(const float* p) { return internal::Load8(p); }
inline float Sum(v8f v) { return internal::Sum8(v); }

typedef uint16_t v8u16 __attribute__((vector_size(16)));
typedef uint32_t v8u32 __attribute__((vector_size(32)));

// Eight bf16 values widened to f32 (exact: bf16 is the top half of an f32).
inline v8f LoadBf16(const uint16_t* p) {
  v8u16 h;
  std::memcpy(&h, p, sizeof(h));
  const v8u32 w = __builtin_convertvector(h, v8u32) << 16;
  v8f f;
  std::memcpy(&f, &w, sizeof(f));
  return f;
}

inline float Bf16(uint16_t bits) {
  const uint32_t w = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &w, sizeof(f));
  return f;
}

// B elements are f32 or bf16 bits: the blocks below are written once for both.
inline v8f LoadB(const float* p) { return Load(p); }
inline v8f LoadB(const uint16_t* p) { return LoadBf16(p); }
inline float ScalarB(float v) { return v; }
inline float ScalarB(uint16_t v) { return Bf16(v); }

// One row of A against four rows of B, accumulating into four vectors (kept in registers:
// named variables, not an array, or GCC spills them).
struct Acc4 {
  v8f c0 = {}, c1 = {}, c2 = {}, c3 = {};
};

template <typename B>
void Finish(const float* a, const B* const b[4], int64_t k8, int64_t k, const Acc4& acc, float* c) {
  float out[4] = {Sum(acc.c0), Sum(acc.c1), Sum(acc.c2), Sum(acc.c3)};
  for (int64_t p = k8; p < k; ++p) {
    for (int j = 0; j < 4; ++j) out[j] += a[p] * ScalarB(b[j][p]);
  }
  std::memcpy(c, out, sizeof(out));
}

// C[i, j0..j0+4) and C[i+1, j0..j0+4) (two rows of A share each load of B). Args is
// SmallGemmArgs or SmallGemmBf16Args.
template <typename Args>
void Block2(const Args& g, int64_t i, int64_t j0) {
  const int64_t k8 = g.k / 8 * 8;
  const float* a0 = g.a + i * g.lda;
  const float* a1 = a0 + g.lda;
  decltype(g.b) b[4] = {g.b + j0 * g.ldb, g.b + (j0 + 1) * g.ldb, g.b + (j0 + 2) * g.ldb,
                        g.b + (j0 + 3) * g.ldb};
  Acc4 r0, r1;
  for (int64_t p = 0; p < k8; p += 8) {
    v8f w0 = LoadB(b[0] + p), w1 = LoadB(b[1] + p), w2 = LoadB(b[2] + p), w3 = LoadB(b[3] + p);
    // Keep each B vector in a register for both rows of A: without this GCC folds the load into
    // each FMA and loads B twice (load ports, not FMAs, then bound the loop).
#ifdef __AVX__
    asm("" : "+x"(w0), "+x"(w1), "+x"(w2), "+x"(w3));
#endif
    const v8f x0 = Load(a0 + p), x1 = Load(a1 + p);
    r0.c0 += x0 * w0;
    r0.c1 += x0 * w1;
    r0.c2 += x0 * w2;
    r0.c3 += x0 * w3;
    r1.c0 += x1 * w0;
    r1.c1 += x1 * w1;
    r1.c2 += x1 * w2;
    r1.c3 += x1 * w3;
  }
  Finish(a0, b, k8, g.k, r0, g.c + i * g.ldc + j0);
  Finish(a1, b, k8, g.k, r1, g.c + (i + 1) * g.ldc + j0);
}

template <typename Args>
void Block1(const Args& g, int64_t i, int64_t j0) {
  const int64_t k8 = g.k / 8 * 8;
  const float* a0 = g.a + i * g.lda;
  decltype(g.b) b[4] = {g.b + j0 * g.ldb, g.b + (j0 + 1) * g.ldb, g.b + (j0 + 2) * g.ldb,
                        g.b + (j0 + 3) * g.ldb};
  Acc4 r0;
  for (int64_t p = 0; p < k8; p += 8) {
    const v8f x0 = Load(a0 + p);
    r0.c0 += x0 * LoadB(b[0] + p);
    r0.c1 += x0 * LoadB(b[1] + p);
    r0.c2 += x0 * LoadB(b[2] + p);
    r0.c3 += x0 * LoadB(b[3] + p);
  }
  Finish(a0, b, k8, g.k, r0, g.c + i * g.ldc + j0);
}

}  // namespace

void SmallGemmAbtBf16(const SmallGemmBf16Args& g) {
  if (g.m == 0) return;
  const int64_t n4 = g.n / 4 * 4;
  if (g.m <= 2) {  // One pass over B: widen in registers as it streams by.
    for (int64_t j = 0; j < n4; j += 4) {
      if (g.m == 2) {
        Block2(g, 0, j);
      } else {
        Block1(g, 0, j);
      }
    }
  }
  // Several rows of A (or B's last < 4 rows): widen four rows of B at a time into an f32 buffer
  // (L1-resident) and run the f32 blocks over every row of A, so each B value is widened once.
  const int64_t k8 = g.k / 8 * 8;
  std::vector<float> rows(4 * g.k);
  for (int64_t j = g.m <= 2 ? n4 : 0; j < g.n; j += 4) {
    const int64_t count = std::min<int64_t>(4, g.n - j);
    for (int64_t r = 0; r < count; ++r) {
      const uint16_t* src = g.b + (j + r) * g.ldb;
      float* dst = rows.data() + r * g.k;
      for (int64_t p = 0; p < k8; p += 8) {
        const v8f v = LoadBf16(src + p);
        std::memcpy(dst + p, &v, sizeof(v));
      }
      for (int64_t p = k8; p < g.k; ++p) dst[p] = Bf16(src[p]);
    }
    const SmallGemmArgs block{g.a, g.m, g.k, g.lda, rows.data(), count, g.k, g.c + j, g.ldc};
    if (j < n4) {
      int64_t i = 0;
      for (; i + 2 <= g.m; i += 2) Block2(block, i, 0);
      if (i < g.m) Block1(block, i, 0);
    } else {
      for (int64_t r = 0; r < count; ++r) {
        for (int64_t i = 0; i < g.m; ++i) {
          g.c[i * g.ldc + j + r] = Dot(g.a + i * g.lda, rows.data() + r * g.k, g.k);
        }
      }
    }
  }
}

void SmallGemmAbt(const SmallGemmArgs& g) {
  const int64_t n4 = g.n / 4 * 4;
  for (int64_t j = 0; j < n4; j += 4) {
    int64_t i = 0;
    for (; i + 2 <= g.m; i += 2) Block2(g, i, j);
    if (i < g.m) Block1(g, i, j);
  }
  for (int64_t j = n4; j < g.n; ++j) {
    for (int64_t i = 0; i < g.m; ++i) {
      g.c[i * g.ldc + j] = Dot(g.a + i * g.lda, g.b + j * g.ldb, g.k);
    }
  }
}

}  // namespace semmoe::kernels::cpu
