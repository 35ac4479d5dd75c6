// The glue of a forward pass on f32 rows in host memory: the CPU references of
// kernels/cuda/forward_ops.h (same arguments; compared by kernels/cuda/forward_ops_test).
//   GatherRowsByIndex — out[r] = table[index[r]] (embedding lookup, picking logit rows);
//   AddRowBias        — x[r] += bias (attention projection biases);
//   AddInPlace        — x += y (the residual stream);
//   SigmoidGateAdd    — out[r] += sigmoid(gate[r]) · y[r] (qwen2_moe's gated shared expert);
//   StorePagedKv      — new key/value rows into a paged cache through page tables;
//   ScatterAddRows    — dst[index[r]] += src[r] (an expert-parallel combine, one source rank);
//   RoundToBf16       — f32 rows to bf16 bits, nearest-even (the operand of a bf16 GEMM);
//   DequantizeFp8     — block-scaled FP8 weights to bf16 bits (the FP8 forward, per layer).
#ifndef SEMMOE_KERNELS_CPU_FORWARD_OPS_H_
#define SEMMOE_KERNELS_CPU_FORWARD_OPS_H_

#include <cstdint>

#include "kernels/op_args.h"

namespace semmoe::kernels::cpu {

// table: [*, width]; index: [rows] valid row ids; out: [rows, width].
void GatherRowsByIndex(const float* table, const int32_t* index, int64_t rows, int64_t width,
                       float* out);

// x: [rows] rows of `width` floats, `row_stride` apart; bias: [width].
void AddRowBias(float* x, int64_t rows, int64_t width, int64_t row_stride, const float* bias);

void AddInPlace(float* x, const float* y, int64_t n);

// out, y: [rows, width]; gate: [rows].
void SigmoidGateAdd(float* out, const float* y, const float* gate, int64_t rows, int64_t width);

// dst[index[r]] += src[r] for r < rows; src: [rows, width]. REQUIRES distinct indices.
void ScatterAddRows(float* dst, const float* src, const int32_t* index, int64_t rows,
                    int64_t width);

// Row t of `rows` ([tokens, width]) goes to cache position position[t] of sequence
// seq_of_token[t]: cache[page_table[seq · max_pages + position / page_size]][position %
// page_size]. cache: [pages, page_size, width]. REQUIRES every page id in range.
void StorePagedKv(const StorePagedKvArgs& args);

// out[i] = the bf16 bits of x[i], rounded to nearest even (kernels/dtype.h F32ToBf16: NaN stays
// NaN, overflow rounds to infinity).
void RoundToBf16(const float* x, int64_t n, uint16_t* out);

// kernels/op_args.h Fp8DequantArgs.
void DequantizeFp8(const Fp8DequantArgs& args);

}  // namespace semmoe::kernels::cpu

#endif  // SEMMOE_KERNELS_CPU_FORWARD_OPS_H_
