// ModelConfig: the architecture hyper-parameters of a Hugging Face MoE checkpoint, parsed from
// its `config.json`.
//
// Supported `model_type`s (field names as in transformers' configuration classes):
//   qwen3_moe  Qwen3MoeConfig   q/k RMSNorm before RoPE; optional dense layers (`mlp_only_layers`,
//                               `decoder_sparse_step`); `head_dim` may differ from hidden/heads.
//   qwen2_moe  Qwen2MoeConfig   q/k/v biases; a shared expert with a sigmoid gate per MoE layer.
//   mixtral    MixtralConfig    `num_local_experts`; every layer sparse; top-k renormalised.
// Anything else, a missing required field, a wrong type or an unsupported feature (rope scaling,
// sliding windows, an activation other than SiLU) is an InvalidArgument naming the field.
#ifndef SEMMOE_ENGINE_MODEL_CONFIG_H_
#define SEMMOE_ENGINE_MODEL_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmoe::engine::model {

enum class Arch { kQwen3Moe, kQwen2Moe, kMixtral };

// "qwen3_moe", "qwen2_moe", "mixtral".
absl::string_view ArchName(Arch arch);
absl::StatusOr<Arch> ParseArch(absl::string_view model_type);

struct ModelConfig {
  Arch arch = Arch::kQwen3Moe;
  int vocab_size = 0;
  int hidden_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;  // `head_dim`, else hidden_size / num_heads.
  float rms_norm_eps = 1e-6f;
  double rope_theta = 10000.0;
  int max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // Biases on q/k/v projections (always true for qwen2_moe).
  bool qk_norm = false;         // RMSNorm over head_dim on q and k before RoPE (qwen3_moe).

  // Mixture of experts.
  int num_experts = 0;
  int top_k = 0;
  int moe_intermediate_size = 0;  // Per expert.
  bool norm_topk_prob = false;    // Renormalise the top-k softmax weights to sum to 1.
  int shared_expert_intermediate_size = 0;  // qwen2_moe only; 0 = no shared expert.
  // Dense layers (qwen3_moe/qwen2_moe): layer i is dense if listed in mlp_only_layers or if
  // (i + 1) % decoder_sparse_step != 0.
  int intermediate_size = 0;
  int decoder_sparse_step = 1;
  std::vector<int> mlp_only_layers;

  std::vector<int32_t> eos_token_ids;  // `eos_token_id`: an int or a list; may be empty.

  // Whether layer `layer` has a sparse MoE block (else a dense SwiGLU MLP).
  bool IsMoeLayer(int layer) const;
  // Indices of the MoE layers, ascending.
  std::vector<int> MoeLayers() const;
  int q_size() const { return num_heads * head_dim; }
  int kv_size() const { return num_kv_heads * head_dim; }
};

// Parses the text of a config.json. Errors name the field ("config.json: num_experts: ...").
absl::StatusOr<ModelConfig> ParseModelConfig(absl::string_view json_text);

// Reads and parses `<dir>/config.json`.
absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& dir);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_MODEL_CONFIG_H_
