// Data schedules for attention-DP driven by affinity: the router's rule. Each request, in
// arrival order, goes to the device its prompt fits best (affinity/prompt_scores.h: the
// log-likelihood of its tokens under each device) among devices with token capacity left
// ((1 + eps) · mean load); if none has room, to the least-loaded device.
#ifndef SEMMOE_PLANNER_EVAL_SCHEDULE_H_
#define SEMMOE_PLANNER_EVAL_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "planner/affinity/layer_affinity.h"
#include "planner/affinity/token_affinity.h"
#include "planner/placement/placement.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

// scores: row-major [vocab_size, num_devices]; tokens ≥ vocab_size score 0. Requests in order.
std::vector<int> AffinityRequests(const std::vector<std::vector<uint32_t>>& prompts,
                                  const std::vector<float>& scores, int num_devices,
                                  double token_balance_eps = 0.05);
// The same over a trace's requests.
std::vector<int> AffinityRequests(const trace::TraceSet& trace, const std::vector<float>& scores,
                                  int num_devices, double token_balance_eps = 0.05);

// The router's rule fed each request's true routing instead of a prediction from its prompt: each
// request, in order, to the device with room that holds most of its actual expert activations
// under `placement` (ties to the lowest index). What perfect prediction reaches with the same
// placement, arrival order and token capacity — the DP analogue of the TP "perfect prediction".
std::vector<int> PerfectRequests(const trace::TraceSet& trace, const Placement& placement,
                                 double token_balance_eps = 0.05);

// Attention-TP with the shuffled reduce-scatter rule (docs/PARALLEL.md, "Attention-TP"): at each
// MoE layer, every token's device is predicted from its id — the device holding most of its
// expected experts under `placement` (C from `affinity`), with that share as confidence — or, when
// `layer_affinity` is given and more confident, from the devices its experts used at the two
// previous layers (the A table); and each batch of
// `batch_tokens` consecutive tokens is cut into equal chunks per device by the engine's rule
// (planner/placement/balanced_assign.h): most confident first, each to its best-scoring device
// with room (so an overflowing token lands on its next-best device); `slack` lets a device take
// up to ⌊(1 + slack) · batch / G⌋ tokens (the engine's --token_balance_eps; 0: equal chunks).
// Returns token_device[layer][token].
std::vector<std::vector<int>> SrsTokens(const trace::TraceSet& trace, const TokenAffinity& affinity,
                                        const Placement& placement, int batch_tokens,
                                        const LayerAffinity* layer_affinity = nullptr,
                                        double slack = 0);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_EVAL_SCHEDULE_H_
