#include "engine/gpu/testing/random_model.h"

#include <random>

namespace semmoe::engine::gpu::testing {
namespace {

using model::Matrix;

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}
  Matrix Mat(int64_t rows, int64_t cols) {
    Matrix m(rows, cols);
    for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = 0.08f * normal_(rng_);
    return m;
  }
  model::Vector Norm(int64_t n) {
    model::Vector v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = 1.0f + 0.1f * normal_(rng_);
    return v;
  }
  model::Vector Bias(int64_t n) { return Mat(n, 1).col(0); }
  model::MlpWeights Mlp(int hidden, int inter) {
    model::MlpWeights m;
    m.gate.w = Mat(inter, hidden);
    m.up.w = Mat(inter, hidden);
    m.down.w = Mat(hidden, inter);
    return m;
  }

 private:
  std::mt19937_64 rng_;
  std::normal_distribution<float> normal_;
};

}  // namespace

model::ModelConfig RandomModelConfig(model::Arch arch) {
  model::ModelConfig c;
  c.arch = arch;
  c.vocab_size = 300;
  c.hidden_size = 128;
  c.num_layers = 3;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 32;
  c.max_position_embeddings = 256;
  c.rope_theta = 10000.0;
  c.num_experts = 8;
  c.top_k = 2;
  c.moe_intermediate_size = 48;
  c.norm_topk_prob = true;
  c.intermediate_size = 96;
  if (arch == model::Arch::kQwen3Moe) {
    c.qk_norm = true;
    c.mlp_only_layers = {1};
  } else if (arch == model::Arch::kQwen2Moe) {
    c.attention_bias = true;
    c.shared_expert_intermediate_size = 64;
    c.norm_topk_prob = false;
  } else {
    c.num_experts = 4;
  }
  return c;
}

model::ModelWeights RandomWeights(const model::ModelConfig& c, uint64_t seed) {
  Generator g(seed);
  model::ModelWeights w;
  w.embed = g.Mat(c.vocab_size, c.hidden_size);
  for (int l = 0; l < c.num_layers; ++l) {
    model::LayerWeights L;
    L.input_norm = g.Norm(c.hidden_size);
    L.post_attention_norm = g.Norm(c.hidden_size);
    L.q.w = g.Mat(c.q_size(), c.hidden_size);
    L.k.w = g.Mat(c.kv_size(), c.hidden_size);
    L.v.w = g.Mat(c.kv_size(), c.hidden_size);
    L.o.w = g.Mat(c.hidden_size, c.q_size());
    if (c.attention_bias) {
      L.q_bias = g.Bias(c.q_size());
      L.k_bias = g.Bias(c.kv_size());
      L.v_bias = g.Bias(c.kv_size());
    }
    if (c.qk_norm) {
      L.q_norm = g.Norm(c.head_dim);
      L.k_norm = g.Norm(c.head_dim);
    }
    L.is_moe = c.IsMoeLayer(l);
    if (!L.is_moe) {
      L.dense = g.Mlp(c.hidden_size, c.intermediate_size);
    } else {
      L.router = g.Mat(c.num_experts, c.hidden_size);
      for (int e = 0; e < c.num_experts; ++e) {
        L.experts.push_back(g.Mlp(c.hidden_size, c.moe_intermediate_size));
      }
      if (c.shared_expert_intermediate_size > 0) {
        L.shared_expert = g.Mlp(c.hidden_size, c.shared_expert_intermediate_size);
        L.shared_expert_gate = g.Mat(1, c.hidden_size);
      }
    }
    w.layers.push_back(std::move(L));
  }
  w.final_norm = g.Norm(c.hidden_size);
  w.lm_head.w = g.Mat(c.vocab_size, c.hidden_size);
  return w;
}

}  // namespace semmoe::engine::gpu::testing
