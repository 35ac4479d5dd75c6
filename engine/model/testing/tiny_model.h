// Seeded random checkpoints in exact Hugging Face layout (config.json, model.safetensors or
// shards + index, generation_config.json, tokenizer.json) for any supported architecture and
// size. Used by unit tests and by `bazel run //tools:make_tiny_model`.
//
// Weights are N(0, init_std²) (norm weights N(1, 0.1²)) from RandomDraws (random_draws.h, the
// in-memory random models' source too), so a given options struct always produces the same
// bytes. The tokenizer is byte-level BPE with the 256 byte tokens, `num_merges` merges learned
// from a small built-in English text, and the Qwen special tokens <|endoftext|>, <|im_start|>,
// <|im_end|>.
#ifndef SEMMOE_ENGINE_MODEL_TESTING_TINY_MODEL_H_
#define SEMMOE_ENGINE_MODEL_TESTING_TINY_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/text/config.h"
#include "kernels/dtype.h"

namespace semmoe::testing {

struct TinyModelOptions {
  engine::model::Arch arch = engine::model::Arch::kQwen3Moe;
  int vocab_size = 0;  // 0: exactly the tokenizer's ids; else ≥ them (padded like Qwen's).
  int num_merges = 64;
  int hidden_size = 64;
  int num_layers = 2;
  int num_heads = 4;
  int num_kv_heads = 2;
  int head_dim = 16;  // qwen3_moe writes it; others use hidden / heads and must agree.
  int num_experts = 8;
  int top_k = 2;
  int moe_intermediate_size = 32;
  int shared_expert_intermediate_size = 48;  // qwen2_moe.
  int intermediate_size = 96;                // Dense layers.
  std::vector<int> mlp_only_layers;          // qwen3_moe/qwen2_moe dense layers.
  bool norm_topk_prob = true;                // qwen3_moe/qwen2_moe.
  bool tie_word_embeddings = false;
  int max_position_embeddings = 512;
  double rope_theta = 10000.0;
  // deepseek_v2 / deepseek_v3: MLA attention and DeepSeekMoE (docs/ENGINE.md).
  struct Deepseek {
    int q_lora_rank = 0;  // 0: a plain q_proj.
    int kv_lora_rank = 32;
    int qk_nope_head_dim = 16, qk_rope_head_dim = 8, v_head_dim = 12;
    int n_shared_experts = 1;  // Each moe_intermediate_size wide.
    int first_k_dense_replace = 1, moe_layer_freq = 1;
    // "" picks the version's own: v2 softmax + group_limited_greedy, v3 sigmoid + noaux_tc
    // (with a random e_score_correction_bias).
    std::string scoring_func, topk_method;
    int n_group = 4, topk_group = 2;
    double routed_scaling_factor = 1.0;
    bool yarn = false;            // rope_scaling yarn: factor 4 over max_position_embeddings / 4.
    bool rope_interleave = true;  // deepseek_v3's key (v2 is always interleaved).
  } deepseek;
  kernels::DType dtype = kernels::DType::kBF16;
  // > 0: block-scaled FP8 as DeepSeek-V3 publishes it — the projection weights in F8_E4M3 with
  // `<name>_scale_inv` per [fp8_block_rows, fp8_block_cols] block (edge blocks partial), the rest
  // in `dtype`, and config.json's quantization_config.
  int fp8_block_rows = 0, fp8_block_cols = 0;
  // With the blocks: the same quantized values stored dequantised (code · scale) in F32, without
  // quantization_config — the FP8 model as a user converting it offline would load it.
  bool fp8_dequantized = false;
  int num_shards = 1;  // > 1 writes model-0000i-of-0000n.safetensors + index.
  uint64_t seed = 0;
  float init_std = 0.08f;
};

// Writes the checkpoint into `dir` (created if missing). InvalidArgument for inconsistent sizes.
absl::Status WriteTinyModel(const TinyModelOptions& options, const std::string& dir);

}  // namespace semmoe::testing

#endif  // SEMMOE_ENGINE_MODEL_TESTING_TINY_MODEL_H_
