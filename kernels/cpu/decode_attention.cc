#include "kernels/cpu/decode_attention.h"

#include "absl/types/span.h"

#include <cstring>

#include "kernels/cpu/nn_ops.h"
#include "kernels/cpu/small_gemm.h"

namespace semmoe::kernels::cpu {
namespace {

using internal::Load8;
using internal::v8f;
typedef int v8i __attribute__((vector_size(32)));

// Lane shuffles of two vectors (indices 0-7 the first, 8-15 the second): GCC's and Clang's
// spellings (the fuzzers build with Clang).
#if defined(__clang__)
#define SEMMOE_SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define SEMMOE_SHUFFLE(a, b, ...) __builtin_shuffle(a, b, v8i{__VA_ARGS__})
#endif

// r[j] = Σ lanes of a[j], for eight vectors at once.
inline v8f TransposeSum(v8f a0, v8f a1, v8f a2, v8f a3, v8f a4, v8f a5, v8f a6, v8f a7) {
#define EVEN 0, 8, 2, 10, 4, 12, 6, 14
#define ODD 1, 9, 3, 11, 5, 13, 7, 15
  const v8f u01 = SEMMOE_SHUFFLE(a0, a1, EVEN) + SEMMOE_SHUFFLE(a0, a1, ODD);
  const v8f u23 = SEMMOE_SHUFFLE(a2, a3, EVEN) + SEMMOE_SHUFFLE(a2, a3, ODD);
  const v8f u45 = SEMMOE_SHUFFLE(a4, a5, EVEN) + SEMMOE_SHUFFLE(a4, a5, ODD);
  const v8f u67 = SEMMOE_SHUFFLE(a6, a7, EVEN) + SEMMOE_SHUFFLE(a6, a7, ODD);
#define LO2 0, 1, 8, 9, 4, 5, 12, 13
#define HI2 2, 3, 10, 11, 6, 7, 14, 15
  const v8f v = SEMMOE_SHUFFLE(u01, u23, LO2) + SEMMOE_SHUFFLE(u01, u23, HI2);
  const v8f w = SEMMOE_SHUFFLE(u45, u67, LO2) + SEMMOE_SHUFFLE(u45, u67, HI2);
#define LO4 0, 1, 2, 3, 8, 9, 10, 11
#define HI4 4, 5, 6, 7, 12, 13, 14, 15
  return SEMMOE_SHUFFLE(v, w, LO4) + SEMMOE_SHUFFLE(v, w, HI4);
#undef EVEN
#undef ODD
#undef LO2
#undef HI2
#undef LO4
#undef HI4
}

void Scores(const DecodeAttentionArgs& g, const float* q) {
  const int d8 = g.head_dim / 8 * 8;
  int p = 0;
  for (; p + 8 <= g.context; p += 8) {
    const float* k[8];
    for (int j = 0; j < 8; ++j) k[j] = g.keys[p + j] + g.offset;
    v8f a0 = {}, a1 = {}, a2 = {}, a3 = {}, a4 = {}, a5 = {}, a6 = {}, a7 = {};
    for (int c = 0; c < d8; c += 8) {
      const v8f x = Load8(q + c);
      a0 += x * Load8(k[0] + c);
      a1 += x * Load8(k[1] + c);
      a2 += x * Load8(k[2] + c);
      a3 += x * Load8(k[3] + c);
      a4 += x * Load8(k[4] + c);
      a5 += x * Load8(k[5] + c);
      a6 += x * Load8(k[6] + c);
      a7 += x * Load8(k[7] + c);
    }
    v8f s = TransposeSum(a0, a1, a2, a3, a4, a5, a6, a7);
    for (int c = d8; c < g.head_dim; ++c) {
      for (int j = 0; j < 8; ++j) s[j] += q[c] * k[j][c];
    }
    s *= g.scale;
    std::memcpy(g.scores + p, &s, sizeof(s));
  }
  for (; p < g.context; ++p) g.scores[p] = Dot(q, g.keys[p] + g.offset, g.head_dim) * g.scale;
}

void WeightedSum(const DecodeAttentionArgs& g, float* out) {
  const int d8 = g.head_dim / 8 * 8;
  for (int c = 0; c < d8; c += 8) {
    v8f a0 = {}, a1 = {}, a2 = {}, a3 = {};  // Four chains hide the FMA latency.
    int p = 0;
    for (; p + 4 <= g.context; p += 4) {
      a0 += g.scores[p] * Load8(g.values[p] + g.offset + c);
      a1 += g.scores[p + 1] * Load8(g.values[p + 1] + g.offset + c);
      a2 += g.scores[p + 2] * Load8(g.values[p + 2] + g.offset + c);
      a3 += g.scores[p + 3] * Load8(g.values[p + 3] + g.offset + c);
    }
    for (; p < g.context; ++p) a0 += g.scores[p] * Load8(g.values[p] + g.offset + c);
    const v8f sum = (a0 + a1) + (a2 + a3);
    std::memcpy(out + c, &sum, sizeof(sum));
  }
  for (int c = d8; c < g.head_dim; ++c) {
    float sum = 0;
    for (int p = 0; p < g.context; ++p) sum += g.scores[p] * g.values[p][g.offset + c];
    out[c] = sum;
  }
}

// Two query heads of the group at once: each key and value load serves both (GQA), which is
// what bounds these loops (about one load per FMA otherwise). `s0`/`s1`: [context] each.
void Scores2(const DecodeAttentionArgs& g, const float* q0, const float* q1, float* s0,
             float* s1) {
  const int d8 = g.head_dim / 8 * 8;
  int p = 0;
  for (; p + 4 <= g.context && d8 == g.head_dim; p += 4) {
    const float* k0 = g.keys[p] + g.offset;
    const float* k1 = g.keys[p + 1] + g.offset;
    const float* k2 = g.keys[p + 2] + g.offset;
    const float* k3 = g.keys[p + 3] + g.offset;
    v8f a0 = {}, a1 = {}, a2 = {}, a3 = {}, b0 = {}, b1 = {}, b2 = {}, b3 = {};
    for (int c = 0; c < d8; c += 8) {
      const v8f x = Load8(q0 + c), y = Load8(q1 + c);
      const v8f w0 = Load8(k0 + c), w1 = Load8(k1 + c), w2 = Load8(k2 + c), w3 = Load8(k3 + c);
      a0 += x * w0;
      a1 += x * w1;
      a2 += x * w2;
      a3 += x * w3;
      b0 += y * w0;
      b1 += y * w1;
      b2 += y * w2;
      b3 += y * w3;
    }
    const v8f sum = TransposeSum(a0, a1, a2, a3, b0, b1, b2, b3) * g.scale;
    for (int j = 0; j < 4; ++j) {
      s0[p + j] = sum[j];
      s1[p + j] = sum[4 + j];
    }
  }
  for (; p < g.context; ++p) {
    s0[p] = Dot(q0, g.keys[p] + g.offset, g.head_dim) * g.scale;
    s1[p] = Dot(q1, g.keys[p] + g.offset, g.head_dim) * g.scale;
  }
}

void WeightedSum2(const DecodeAttentionArgs& g, const float* s0, const float* s1, float* o0,
                  float* o1) {
  const int d8 = g.head_dim / 8 * 8;
  int c = 0;
  for (; c + 16 <= d8; c += 16) {  // 16 columns × 2 heads × 2 chains: 8 accumulators.
    v8f a0 = {}, a1 = {}, b0 = {}, b1 = {}, a2 = {}, a3 = {}, b2 = {}, b3 = {};
    int p = 0;
    for (; p + 2 <= g.context; p += 2) {
      const float* v0 = g.values[p] + g.offset + c;
      const float* v1 = g.values[p + 1] + g.offset + c;
      const v8f x0 = Load8(v0), x1 = Load8(v0 + 8), y0 = Load8(v1), y1 = Load8(v1 + 8);
      a0 += s0[p] * x0;
      a1 += s0[p] * x1;
      b0 += s1[p] * x0;
      b1 += s1[p] * x1;
      a2 += s0[p + 1] * y0;
      a3 += s0[p + 1] * y1;
      b2 += s1[p + 1] * y0;
      b3 += s1[p + 1] * y1;
    }
    for (; p < g.context; ++p) {
      const float* v0 = g.values[p] + g.offset + c;
      const v8f x0 = Load8(v0), x1 = Load8(v0 + 8);
      a0 += s0[p] * x0;
      a1 += s0[p] * x1;
      b0 += s1[p] * x0;
      b1 += s1[p] * x1;
    }
    const v8f r0 = a0 + a2, r1 = a1 + a3, r2 = b0 + b2, r3 = b1 + b3;
    std::memcpy(o0 + c, &r0, sizeof(r0));
    std::memcpy(o0 + c + 8, &r1, sizeof(r1));
    std::memcpy(o1 + c, &r2, sizeof(r2));
    std::memcpy(o1 + c + 8, &r3, sizeof(r3));
  }
  for (; c < g.head_dim; ++c) {
    float x = 0, y = 0;
    for (int p = 0; p < g.context; ++p) {
      x += s0[p] * g.values[p][g.offset + c];
      y += s1[p] * g.values[p][g.offset + c];
    }
    o0[c] = x;
    o1[c] = y;
  }
}

}  // namespace

void DecodeAttention(const DecodeAttentionArgs& args) {
  const int64_t hd = args.head_dim;
  int h = 0;
  for (; h + 2 <= args.group; h += 2) {
    float* s0 = args.scores;
    float* s1 = args.scores + args.context;
    Scores2(args, args.q + h * hd, args.q + (h + 1) * hd, s0, s1);
    Softmax(absl::Span<float>(s0, args.context));
    Softmax(absl::Span<float>(s1, args.context));
    WeightedSum2(args, s0, s1, args.out + h * hd, args.out + (h + 1) * hd);
  }
  for (; h < args.group; ++h) {
    Scores(args, args.q + h * hd);
    Softmax(absl::Span<float>(args.scores, args.context));
    WeightedSum(args, args.out + h * hd);
  }
}

}  // namespace semmoe::kernels::cpu
