// SwiGLU experts over rows grouped by expert (after kernels/cpu/moe_routing PermuteByExpert): for
// each expert e and each of its rows x (bf16): out = down_e · (silu(gate_e · x) ⊙ (up_e · x)),
// with bf16 weights and every product accumulated in f32 (in index order); the activation stays
// f32 unless `bf16_activation` (then it is rounded to bf16, nearest-even, before the down
// projection: what the tensor-core kernel feeds its second GEMM). The CPU reference of
// kernels/cuda/grouped_swiglu.
#ifndef SEMMOE_KERNELS_CPU_GROUPED_SWIGLU_H_
#define SEMMOE_KERNELS_CPU_GROUPED_SWIGLU_H_

#include <cstdint>

#include "kernels/op_args.h"

namespace semmoe::kernels::cpu {

void GroupedSwiGlu(const GroupedSwiGluArgs& args);

}  // namespace semmoe::kernels::cpu

#endif  // SEMMOE_KERNELS_CPU_GROUPED_SWIGLU_H_
