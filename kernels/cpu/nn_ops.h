// Element-wise and row-wise neural-network ops on f32 rows in host memory (the CPU peers of the
// GPU kernels). Each takes named shapes; rows are contiguous, `row_stride` apart (in floats).
// No allocation; no model knowledge.
#ifndef SEMMOE_KERNELS_CPU_NN_OPS_H_
#define SEMMOE_KERNELS_CPU_NN_OPS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "kernels/op_args.h"

namespace semmoe::kernels::cpu {

// x[r] = weight ⊙ x[r] / sqrt(mean(x[r]²) + eps) for each of `rows` rows of `width` floats (the
// Hugging Face RMSNorm: statistics in f32, weight applied after normalising).
void RmsNorm(const RmsNormArgs& args);

// Rotary position embedding, rotate-half convention (HF Llama/Qwen/Mixtral): for each row of
// `heads` × `head_dim` floats at position positions[r], pairs (i, i + head_dim/2) rotate by
// positions[r] · inv_freq[i]. `cos`/`sin` tables are [max_position, head_dim/2] (RopeTables).
struct RopeArgs {
  float* x;
  int64_t rows;
  int64_t row_stride;
  int heads;
  int head_dim;
  const int32_t* positions;  // [rows]
  const float* cos;
  const float* sin;
};
void ApplyRope(const RopeArgs& args);

// RoPE on part of each head (MLA's rotary dims): kernels/op_args.h PartialRopeArgs.
void ApplyPartialRope(const PartialRopeArgs& args);

// cos/sin tables for positions [0, max_position) from the given frequencies (f32 angle
// p · inv_freq[i], as HF computes it), each multiplied by `scale` (YaRN's attention factor).
// `cos`/`sin` must hold max_position × inv_freq.size() floats.
void RopeTablesFromInvFreq(int max_position, absl::Span<const float> inv_freq, float scale,
                           float* cos, float* sin);

// cos/sin tables for positions [0, max_position): angle = p · theta^(-2i/head_dim), computed in
// double and rounded once. `cos`/`sin` must hold max_position × head_dim/2 floats.
void RopeTables(int max_position, int head_dim, double theta, float* cos, float* sin);

// gate[i] = silu(gate[i]) · up[i] over `n` floats (SwiGLU), in place.
void SiluMul(float* gate, const float* up, int64_t n);

// In-place softmax of one row (max-subtracted, f32).
void Softmax(absl::Span<float> row);

// Causal attention weights in place: row t of `scores` ([rows, cols], rows `row_stride` apart)
// is the softmax of its first start + t + 1 entries, the rest set to 0 (query t sits at
// position start + t and sees positions up to its own).
struct CausalSoftmaxArgs {
  float* scores = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_stride = 0;
  int64_t start = 0;
};
void CausalSoftmax(const CausalSoftmaxArgs& args);

// HF's rotary frequencies inv_freq[i] = theta^(-2i/dim) for i < dim/2, rounded to f32.
std::vector<float> RopeInvFreq(int dim, double theta);

// The k largest entries of `values` in descending order (ties: lower index first).
// REQUIRES: 0 < k <= values.size(); out_ids/out_values hold k entries.
void TopK(absl::Span<const float> values, int k, int32_t* out_ids, float* out_values);

}  // namespace semmoe::kernels::cpu

#endif  // SEMMOE_KERNELS_CPU_NN_OPS_H_
