// SwiGLU experts over rows grouped by expert (after kernels/cpu/moe_routing PermuteByExpert): for
// each expert e and each of its rows x (bf16): out = down_e · (silu(gate_e · x) ⊙ (up_e · x)),
// with bf16 weights and every product accumulated in f32 (in index order); the activation stays
// f32 unless `bf16_activation` (then it is rounded to bf16, nearest-even, before the down
// projection: what the tensor-core kernel feeds its second GEMM). The CPU reference of
// kernels/cuda/grouped_swiglu.
#ifndef SEMMOE_KERNELS_CPU_GROUPED_SWIGLU_H_
#define SEMMOE_KERNELS_CPU_GROUPED_SWIGLU_H_

#include <cstdint>

namespace semmoe::kernels::cpu {

struct GroupedSwiGluArgs {
  const uint16_t* x;       // [rows, hidden] bf16 bits.
  const int64_t* offsets;  // [experts + 1]: expert e's rows are [offsets[e], offsets[e+1]).
  int experts;
  int64_t hidden, inter;
  const uint16_t* gate;  // [experts, inter, hidden] bf16 bits.
  const uint16_t* up;    // [experts, inter, hidden].
  const uint16_t* down;  // [experts, hidden, inter].
  float* out;            // [rows, hidden].
  bool bf16_activation = false;
};
void GroupedSwiGlu(const GroupedSwiGluArgs& args);

}  // namespace semmoe::kernels::cpu

#endif  // SEMMOE_KERNELS_CPU_GROUPED_SWIGLU_H_
