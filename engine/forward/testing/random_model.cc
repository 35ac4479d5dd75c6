#include "engine/forward/testing/random_model.h"

#include <string>

#include "engine/model/testing/random_draws.h"

namespace semmoe::engine::forward::testing {
namespace {

using model::Matrix;

class Generator {
 public:
  Generator(uint64_t seed, const RandomFill& fill) : draws_(seed), fill_(fill) {}
  Matrix Mat(int64_t rows, int64_t cols) {
    Matrix m(rows, cols);
    Fill(m.data(), m.size(), 0.0f, fill_.stddev);
    return m;
  }
  model::Vector Norm(int64_t n) {
    model::Vector v(n);
    Fill(v.data(), n, 1.0f, 0.1f);
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
  void Fill(float* out, int64_t n, float mean, float std) {
    if (fill_.fast_uniform) {
      draws_.FillUniform(out, n, mean, std);
    } else {
      draws_.FillNormal(out, n, mean, std);
    }
  }

  semmoe::testing::RandomDraws draws_;
  RandomFill fill_;
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
  } else if (model::IsDeepseek(arch)) {
    // MLA: 4 heads of [32 nope | 16 rope], values of 32, a latent of 64 (+ 16 rotary). 8 experts
    // in 4 groups, the best 2 kept; a dense first layer; two ungated shared experts' width.
    c.mla = true;
    c.num_kv_heads = c.num_heads;
    c.mla_dims = {
        .q_lora_rank = 0, .kv_lora_rank = 64, .qk_nope_head_dim = 32, .qk_rope_head_dim = 16};
    c.head_dim = 48;
    c.v_head_dim = 32;
    c.rope_interleave = true;
    c.first_k_dense_replace = 1;
    c.n_group = 4;
    c.topk_group = 2;
    c.shared_expert_intermediate_size = 2 * c.moe_intermediate_size;
    if (arch == model::Arch::kDeepseekV3) {  // q LoRA, sigmoid + bias-corrected choice.
      c.mla_dims.q_lora_rank = 96;
      c.scoring = model::ScoringFunc::kSigmoid;
      c.topk_method = model::TopkMethod::kNoauxTc;
      c.routed_scaling_factor = 2.5;
      c.scale_after_norm = true;
    } else {  // V2: softmax, group max, scaled raw weights, YaRN.
      c.topk_method = model::TopkMethod::kGroupLimitedGreedy;
      c.norm_topk_prob = false;
      c.routed_scaling_factor = 1.5;
      c.rope_interleave = false;
      c.yarn = {.enabled = true,
                .factor = 4.0,
                .original_max_position_embeddings = 64,
                .beta_fast = 32.0,
                .beta_slow = 1.0,
                .attention_factor = 1.1386,
                .softmax_mscale = 1.2965};
    }
  } else {
    c.num_experts = 4;
  }
  if (c.v_head_dim == 0) c.v_head_dim = c.head_dim;
  return c;
}

model::ModelWeights RandomWeights(const model::ModelConfig& c, uint64_t seed,
                                  const RandomFill& fill) {
  Generator g(seed, fill);
  model::ModelWeights w;
  w.embed = g.Mat(c.vocab_size, c.hidden_size);
  for (int l = 0; l < c.num_layers; ++l) {
    model::LayerWeights L;
    L.input_norm = g.Norm(c.hidden_size);
    L.post_attention_norm = g.Norm(c.hidden_size);
    if (c.mla) {
      const model::MlaConfig& m = c.mla_dims;
      if (m.q_lora_rank > 0) {
        L.mla.q_a.w = g.Mat(m.q_lora_rank, c.hidden_size);
        L.mla.q_a_norm = g.Norm(m.q_lora_rank);
        L.mla.q_b.w = g.Mat(c.q_size(), m.q_lora_rank);
      } else {
        L.q.w = g.Mat(c.q_size(), c.hidden_size);
      }
      L.mla.kv_a.w = g.Mat(m.kv_lora_rank + m.qk_rope_head_dim, c.hidden_size);
      L.mla.kv_a_norm = g.Norm(m.kv_lora_rank);
      L.mla.kv_b.w = g.Mat(static_cast<int64_t>(c.num_heads) * (m.qk_nope_head_dim + c.v_head_dim),
                           m.kv_lora_rank);
    } else {
      L.q.w = g.Mat(c.q_size(), c.hidden_size);
      L.k.w = g.Mat(c.kv_size(), c.hidden_size);
      L.v.w = g.Mat(c.kv_size(), c.hidden_size);
    }
    L.o.w = g.Mat(c.hidden_size, c.attn_out_size());
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
      if (c.topk_method == model::TopkMethod::kNoauxTc) L.router_bias = g.Bias(c.num_experts);
      for (int e = 0; e < c.num_experts; ++e) {
        L.experts.push_back(g.Mlp(c.hidden_size, c.moe_intermediate_size));
      }
      if (c.shared_expert_intermediate_size > 0) {
        L.shared_expert = g.Mlp(c.hidden_size, c.shared_expert_intermediate_size);
        if (!model::IsDeepseek(c.arch)) L.shared_expert_gate = g.Mat(1, c.hidden_size);
      }
    }
    w.layers.push_back(std::move(L));
  }
  w.final_norm = g.Norm(c.hidden_size);
  w.lm_head.w = g.Mat(c.vocab_size, c.hidden_size);
  return w;
}

absl::StatusOr<model::ModelConfig> Qwen3A3bConfig(int layers) {
  return model::ParseModelConfig(
      R"({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
          "vocab_size": 151936, "hidden_size": 2048, "num_hidden_layers": )" +
      std::to_string(layers) + R"(,
          "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
          "max_position_embeddings": 40960, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
          "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
          "intermediate_size": 6144, "norm_topk_prob": true, "decoder_sparse_step": 1,
          "mlp_only_layers": [], "tie_word_embeddings": false, "attention_bias": false})");
}

}  // namespace semmoe::engine::forward::testing
