// ModelConfig: the architecture hyper-parameters of a Hugging Face MoE checkpoint, parsed from
// its `config.json`.
//
// Supported `model_type`s (field names as in transformers' configuration classes):
//   qwen3_moe  Qwen3MoeConfig   q/k RMSNorm before RoPE; optional dense layers (`mlp_only_layers`,
//                               `decoder_sparse_step`); `head_dim` may differ from hidden/heads.
//   qwen2_moe  Qwen2MoeConfig   q/k/v biases; a shared expert with a sigmoid gate per MoE layer.
//   mixtral    MixtralConfig    `num_local_experts`; every layer sparse; top-k renormalised.
//   deepseek_v2 / deepseek_v3   multi-head latent attention (MLA), YaRN rope scaling, dense
//                               first layers, ungated shared experts, softmax or sigmoid
//                               scoring with greedy, group-limited or bias-corrected (noaux_tc)
//                               top-k (engine/model/deepseek_config.cc; docs/ENGINE.md).
// Anything else, a missing required field, a wrong type or an unsupported feature (rope scaling
// other than DeepSeek's YaRN, sliding windows, quantized checkpoints, an activation other than
// SiLU) is an InvalidArgument naming the field.
#ifndef SEMMOE_ENGINE_TEXT_CONFIG_H_
#define SEMMOE_ENGINE_TEXT_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmoe::engine::model {

enum class Arch { kQwen3Moe, kQwen2Moe, kMixtral, kDeepseekV2, kDeepseekV3 };

// "qwen3_moe", "qwen2_moe", "mixtral", "deepseek_v2", "deepseek_v3".
absl::string_view ArchName(Arch arch);
absl::StatusOr<Arch> ParseArch(absl::string_view model_type);
// deepseek_v2 or deepseek_v3.
inline bool IsDeepseek(Arch arch) { return arch == Arch::kDeepseekV2 || arch == Arch::kDeepseekV3; }

// How a router scores experts and picks the top-k (DeepSeek's MoEGate; Qwen and Mixtral use
// softmax + greedy).
enum class ScoringFunc { kSoftmax, kSigmoid };
enum class TopkMethod {
  kGreedy,              // Top-k of all scores.
  kGroupLimitedGreedy,  // Keep the topk_group groups with the largest max score, then top-k.
  kNoauxTc,  // Choose by score + e_score_correction_bias: groups by the sum of their top-2,
             // then top-k; weights from the unbiased scores.
};

// Multi-head latent attention (deepseek_v2/v3). Per head, q = [q_nope | q_rope] and kv_b's
// output = [k_nope | v]; the rotary key is one head shared by all query heads.
struct MlaConfig {
  int q_lora_rank = 0;  // 0: a plain q_proj; else q_a_proj → q_a_layernorm → q_b_proj.
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
};

// DeepSeek's YaRN (rope_scaling.type "yarn"): interpolated rotary frequencies, cos/sin scaled
// by attention_factor, and the softmax scale multiplied by softmax_mscale.
struct YarnConfig {
  bool enabled = false;
  double factor = 1.0;
  int original_max_position_embeddings = 0;
  double beta_fast = 32.0, beta_slow = 1.0;
  double attention_factor = 1.0;  // On cos and sin.
  double softmax_mscale = 1.0;    // get_mscale(factor, mscale_all_dim)²; 1 without mscale_all_dim.
};

// Floats per position per layer: the key row and the value row. Standard attention stores K and
// V of the KV heads (both kv_heads × head_dim); MLA stores one key row (the latent and the
// rotary key) and no values.
struct KvShape {
  int key_size = 0;
  int value_size = 0;
  int floats() const { return key_size + value_size; }
};

struct ModelConfig {
  Arch arch = Arch::kQwen3Moe;
  int vocab_size = 0;
  int hidden_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;    // `head_dim`, else hidden_size / num_heads. MLA: the q/k head size
                       // qk_nope + qk_rope (the config's own `head_dim` key is ignored).
  int v_head_dim = 0;  // The value head size: head_dim except under MLA (`v_head_dim`).
  float rms_norm_eps = 1e-6f;
  double rope_theta = 10000.0;
  int max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // Biases on q/k/v projections (always true for qwen2_moe).
  bool qk_norm = false;         // RMSNorm over head_dim on q and k before RoPE (qwen3_moe).
  bool mla = false;             // deepseek_v2/v3: multi-head latent attention (below).
  MlaConfig mla_dims;
  YarnConfig yarn;
  // MLA: RoPE rotates the pairs (2i, 2i+1) of the rotary dims (DeepSeek's layout); false: the
  // halves (i, i + d/2) as everywhere else (deepseek_v3's `rope_interleave`).
  bool rope_interleave = false;

  // Mixture of experts.
  int num_experts = 0;
  int top_k = 0;
  int moe_intermediate_size = 0;  // Per expert.
  bool norm_topk_prob = false;    // Renormalise the top-k weights to sum to 1.
  ScoringFunc scoring = ScoringFunc::kSoftmax;
  TopkMethod topk_method = TopkMethod::kGreedy;
  int n_group = 1, topk_group = 1;     // Expert groups (consecutive ids) and how many are kept.
  double routed_scaling_factor = 1.0;  // DeepSeek: multiplies the routed experts' weights.
  // deepseek_v3's rule: weights are normalised (when norm_topk_prob and top_k > 1) and then
  // scaled. deepseek_v2's: normalised, or else scaled (DeepSeek's released MoEGate).
  bool scale_after_norm = false;
  // qwen2_moe: one shared expert behind a sigmoid gate. deepseek: n_shared_experts ×
  // moe_intermediate_size wide, ungated (weight 1). 0 = no shared expert.
  int shared_expert_intermediate_size = 0;
  bool shared_expert_gated = false;
  // Dense layers. qwen3_moe/qwen2_moe: layer i is dense if listed in mlp_only_layers or if
  // (i + 1) % decoder_sparse_step != 0. deepseek: layer i is MoE iff i >= first_k_dense_replace
  // and i % moe_layer_freq == 0.
  int intermediate_size = 0;
  int decoder_sparse_step = 1;
  std::vector<int> mlp_only_layers;
  int first_k_dense_replace = 0, moe_layer_freq = 1;

  std::vector<int32_t> eos_token_ids;  // `eos_token_id`: an int or a list; may be empty.

  // Block-scaled FP8 weights (`quantization_config`, quant_method fp8): each F8_E4M3 weight
  // [out, in] comes with `<name>_scale_inv` [ceil(out / block_rows), ceil(in / block_cols)], and
  // w = fp8 · scale_inv of its block. Zero: not an FP8 checkpoint.
  struct Fp8 {
    int block_rows = 0, block_cols = 0;
    bool enabled() const { return block_rows > 0; }
  } fp8;

  // Whether layer `layer` has a sparse MoE block (else a dense SwiGLU MLP).
  bool IsMoeLayer(int layer) const;
  // Indices of the MoE layers, ascending.
  std::vector<int> MoeLayers() const;
  int q_size() const { return num_heads * head_dim; }
  int kv_size() const { return num_kv_heads * head_dim; }  // K (or V) projection rows; not MLA.
  int attn_out_size() const { return num_heads * v_head_dim; }  // o_proj's input.
  // What the KV cache holds per position per layer: K and V rows, or under MLA the normalised
  // latent and the rotated rotary key (kv_lora_rank + qk_rope_head_dim floats, no values).
  KvShape kv_shape() const;
};

// Parses the text of a config.json. Errors name the field ("config.json: num_experts: ...").
absl::StatusOr<ModelConfig> ParseModelConfig(absl::string_view json_text);

// Reads and parses `<dir>/config.json`.
absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& dir);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_CONFIG_H_
