#include "engine/forward/testing/random_model.h"

#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace semmoe::engine::forward::testing {
namespace {

using model::Matrix;

class Generator {
 public:
  Generator(uint64_t seed, const RandomFill& fill) : rng_(seed), state_(seed), fill_(fill) {}
  Matrix Mat(int64_t rows, int64_t cols) {
    Matrix m(rows, cols);
    if (fill_.fast_uniform) {
      FillUniform(m.data(), m.size());
    } else {
      for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = fill_.stddev * Draw();
    }
    return m;
  }
  model::Vector Norm(int64_t n) {
    model::Vector v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = 1.0f + 0.1f * Draw();
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
  static constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;  // splitmix64's increment.

  // splitmix64's output for `state`, as a uniform value on ±√3 (mean 0, deviation 1).
  static float Uniform(uint64_t state) {
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    constexpr float kUnit = 1.0f / 16777216.0f;  // 24 bits → [0, 1).
    return 1.7320508f * (2.0f * static_cast<float>(z >> 40) * kUnit - 1.0f);
  }

  // Mean 0, deviation 1: normal, or uniform.
  float Draw() {
    if (!fill_.fast_uniform) return normal_(rng_);
    state_ += kGamma;
    return Uniform(state_);
  }

  // n draws of the uniform stream, the i-th from state + (i + 1)·γ: the same values whichever
  // thread computes them, so large matrices are filled in parallel.
  void FillUniform(float* out, int64_t n) {
    const uint64_t base = state_;
    const float scale = fill_.stddev;
    auto fill = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        out[i] = scale * Uniform(base + static_cast<uint64_t>(i + 1) * kGamma);
      }
    };
    const int64_t threads =
        n < (1 << 20) ? 1 : std::max<int64_t>(1, std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    for (int64_t t = 1; t < threads; ++t) {
      pool.emplace_back(fill, n * t / threads, n * (t + 1) / threads);
    }
    fill(0, n / threads);
    for (std::thread& t : pool) t.join();
    state_ += static_cast<uint64_t>(n) * kGamma;
  }

  std::mt19937_64 rng_;
  std::normal_distribution<float> normal_;
  uint64_t state_;
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
