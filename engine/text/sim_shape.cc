#include "engine/text/sim_shape.h"

namespace semmoe::engine::model {

planner::sim::ModelShape ShapeFromConfig(const ModelConfig& c, const std::string& name) {
  planner::sim::ModelShape s;
  s.name = name;
  s.hidden = c.hidden_size;
  s.vocab = c.vocab_size;
  for (int l = 0; l < c.num_layers; ++l) s.moe_layer.push_back(c.IsMoeLayer(l));
  const int64_t h = c.hidden_size;
  if (c.mla) {
    const auto& m = c.mla_dims;
    const int64_t heads = c.num_heads, qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
    s.attention_params =
        (m.q_lora_rank > 0 ? h * m.q_lora_rank + int64_t{m.q_lora_rank} * heads * qk
                           : h * heads * qk) +
        h * (m.kv_lora_rank + m.qk_rope_head_dim) +
        int64_t{m.kv_lora_rank} * heads * (m.qk_nope_head_dim + c.v_head_dim) +
        heads * c.v_head_dim * h;
  } else {
    s.attention_params = h * c.q_size() + 2 * h * c.kv_size() + int64_t{c.attn_out_size()} * h;
  }
  s.attention_heads = c.num_heads;
  s.qk_head_dim = c.head_dim;
  s.v_head_dim = c.v_head_dim;
  s.kv_values = c.kv_shape().floats();
  s.num_experts = c.num_experts;
  s.top_k = c.top_k;
  s.expert_intermediate = c.moe_intermediate_size;
  s.shared_intermediate = c.shared_expert_intermediate_size;
  s.dense_intermediate = c.intermediate_size;
  return s;
}

}  // namespace semmoe::engine::model
