// A MoE layer's routing: each token's top-k experts and their weights, and the model's rule for
// choosing them as the gating kernel's arguments.
#ifndef SEMMOE_ENGINE_MODEL_ROUTING_H_
#define SEMMOE_ENGINE_MODEL_ROUTING_H_

#include <cstdint>
#include <vector>

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
// the caller sets logits, tokens, ids and weights): what every op set's gating runs, so a new
// routing rule is written once. Scores every expert (softmax or sigmoid, f32), limits to the
// best groups (group_limited_greedy, noaux_tc), takes the top-k and weights them: renormalised
// when norm_topk_prob, and for DeepSeek times routed_scaling_factor (config.h states both
// versions' rules). `bias`: the layer's correction bias (noaux_tc), or null.
kernels::RouterGatingArgs RoutingRule(const ModelConfig& config, const float* bias);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_MODEL_ROUTING_H_
