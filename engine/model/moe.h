// The sparse MoE block, split into its two halves so expert parallelism can put a dispatch
// between them: Route() picks each token's experts, RunExperts() applies the experts a process
// holds, grouped by expert.
#ifndef SEMMOE_ENGINE_MODEL_MOE_H_
#define SEMMOE_ENGINE_MODEL_MOE_H_

#include <cstdint>
#include <vector>

#include "engine/model/weights.h"
#include "engine/text/config.h"
#include "kernels/op_args.h"

namespace semmoe::engine::model {

// Per token, the top-k experts in descending order of what chose them (the router score; under
// noaux_tc score + correction bias) and the weights applied.
struct Routing {
  int top_k = 0;
  std::vector<int32_t> expert_ids;  // [tokens, top_k]
  std::vector<float> weights;       // [tokens, top_k]
  int tokens() const { return top_k == 0 ? 0 : static_cast<int>(expert_ids.size()) / top_k; }
};

// The model's routing rule as the gating kernel's arguments (kernels/op_args.h RouterGatingArgs;
// the caller sets logits, tokens, ids and weights): what every backend's gating runs, so a new
// routing rule is written once. `bias`: the layer's correction bias (noaux_tc), or null.
kernels::RouterGatingArgs RoutingRule(const ModelConfig& config, const float* bias);

// Scores every expert (softmax or sigmoid, f32), limits to the best groups (group_limited_greedy,
// noaux_tc), takes the top-k and weights them: renormalised when norm_topk_prob, and for DeepSeek
// times routed_scaling_factor (config.h states both versions' rules).
// `h`: [tokens, hidden] (post-attention-norm hidden states).
Routing Route(const ModelConfig& config, const LayerWeights& layer, const Matrix& h);

// out[t] += Σ_j weight[t][j] · expert_j(h[t]); each expert runs once, on all its tokens, as one
// GEMM per projection. Entries with an id outside [0, experts) are skipped (served by another EP
// rank: engine/parallel/dispatch_plan.h marks them num_experts).
// REQUIRES: every other routed expert is loaded in `layer`.
void RunExperts(const LayerWeights& layer, const Matrix& h, const Routing& routing, Matrix& out);

// out += sigmoid(h · shared_gateᵀ) ⊙ shared_expert(h) (qwen2_moe), or out += shared_expert(h)
// (DeepSeek's ungated shared experts); a no-op without a shared expert.
void RunSharedExpert(const LayerWeights& layer, const Matrix& h, Matrix& out);

// out = down(silu(gate(h)) ⊙ up(h)).
void RunMlp(const MlpWeights& mlp, const Matrix& h, Matrix& out);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_MODEL_MOE_H_
