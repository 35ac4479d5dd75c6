// C = A · Bᵀ for few rows of A, without packing: A [m, k] and B [n, k] row-major (B is an HF
// linear weight [out, in]), C [m, n] row-major. Each C entry is a dot product of two contiguous
// rows; B's rows are read once per two rows of A.
//
// Eigen's blocked GEMM packs both operands on every call — for a decode step's handful of rows
// that repacking of the weight costs as much as the multiply. This kernel is for m up to ~16;
// use cpu::Gemm above that. Written with GCC vector extensions, so the same code is AVX2 under
// -march=x86-64-v3 and SSE otherwise.
#ifndef SEMMOE_KERNELS_CPU_SMALL_GEMM_H_
#define SEMMOE_KERNELS_CPU_SMALL_GEMM_H_

#include <cstdint>
#include <cstring>

namespace semmoe::kernels::cpu {

struct SmallGemmArgs {
  const float* a;  // [m, k], rows lda apart.
  int64_t m;
  int64_t k;
  int64_t lda;
  const float* b;  // [n, k], rows ldb apart.
  int64_t n;
  int64_t ldb;
  float* c;  // [m, n], rows ldc apart; overwritten.
  int64_t ldc;
};
void SmallGemmAbt(const SmallGemmArgs& args);

// The same with B given as bf16 bits (B's values exactly as a BF16 checkpoint stores them):
// each is widened to f32 in registers, so the result equals SmallGemmAbt on the f32 values
// bit for bit, while B — the weight, the bytes that bound a decode step — is half the size.
struct SmallGemmBf16Args {
  const float* a;  // [m, k], rows lda apart.
  int64_t m;
  int64_t k;
  int64_t lda;
  const uint16_t* b;  // [n, k] bf16 bits, rows ldb apart.
  int64_t n;
  int64_t ldb;
  float* c;  // [m, n], rows ldc apart; overwritten.
  int64_t ldc;
};
void SmallGemmAbtBf16(const SmallGemmBf16Args& args);

// Σ a[i]·b[i] and y += alpha·x over n floats (inline: called per cache row in attention).
namespace internal {
typedef float v8f __attribute__((vector_size(32)));
inline v8f Load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof(v));  // Unaligned load.
  return v;
}
inline float Sum8(v8f v) {
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}
}  // namespace internal

inline float Dot(const float* a, const float* b, int64_t n) {
  using internal::Load8;
  const int64_t n8 = n / 8 * 8;
  internal::v8f acc = {};
  for (int64_t p = 0; p < n8; p += 8) acc += Load8(a + p) * Load8(b + p);
  float sum = internal::Sum8(acc);
  for (int64_t p = n8; p < n; ++p) sum += a[p] * b[p];
  return sum;
}

inline void Axpy(float alpha, const float* x, float* y, int64_t n) {
  using internal::Load8;
  const int64_t n8 = n / 8 * 8;
  const internal::v8f a = {alpha, alpha, alpha, alpha, alpha, alpha, alpha, alpha};
  for (int64_t p = 0; p < n8; p += 8) {
    internal::v8f v = Load8(y + p) + a * Load8(x + p);
    std::memcpy(y + p, &v, sizeof(v));
  }
  for (int64_t p = n8; p < n; ++p) y[p] += alpha * x[p];
}

}  // namespace semmoe::kernels::cpu

#endif  // SEMMOE_KERNELS_CPU_SMALL_GEMM_H_
