// MoE routing on the CPU: the references the CUDA kernels (kernels/cuda/moe_routing.h) are
// compared with.
//   gating    — per token: softmax over the experts' logits, the top k (ties: lower expert id
//               first), optionally renormalised to sum to 1;
//   permute   — the token rows grouped by expert: a stable counting sort of the T×k (token,
//               slot) entries by expert id, so each expert's rows keep token order;
//   combine   — the inverse with the gate weights: out[t] = Σ_j w[t, j] · y[position(t, j)],
//               summed in slot order;
//   shuffle   — pack rows into a permuted order (the shuffled reduce-scatter) and unpack them.
#ifndef SEMMOE_KERNELS_CPU_MOE_ROUTING_H_
#define SEMMOE_KERNELS_CPU_MOE_ROUTING_H_

#include <cstdint>

#include "kernels/op_args.h"

namespace semmoe::kernels::cpu {

void RouterGating(const RouterGatingArgs& args);

// The (token, slot) entries grouped by expert, into the caller's buffers (counts included).
// ids in [0, experts).
void PermuteByExpert(const PermuteByExpertArgs& args);

// y[p] = x[entry_of_position[p] / k] for every position.
void GatherRows(const GatherRowsArgs& args);

// out[t] = Σ_j weights[t·k + j] · y[position_of_entry[t·k + j]] (j ascending).
void CombineRows(const CombineRowsArgs& args);

// packed[p] = x[order[p]] / x[order[p]] = packed[p]; order is a permutation of [0, rows).
void ShufflePack(const float* x, const int32_t* order, int64_t rows, int64_t hidden, float* packed);
void ShuffleUnpack(const float* packed, const int32_t* order, int64_t rows, int64_t hidden,
                   float* x);

}  // namespace semmoe::kernels::cpu

#endif  // SEMMOE_KERNELS_CPU_MOE_ROUTING_H_
