#include "engine/text/config.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "engine/text/deepseek_config.h"
#include "engine/text/quantization_config.h"

namespace semmoe::engine::model {
namespace {

constexpr int64_t kMaxDim = 1 << 20;

absl::Status RejectUnsupported(const JsonFields& f, Arch arch) {
  ASSIGN_OR_RETURN(std::string act, f.String("hidden_act", "silu"));
  if (act != "silu")
    return f.Error("hidden_act", absl::StrCat("'", act, "' is not supported (only silu)"));
  if (IsDeepseek(arch)) return absl::OkStatus();  // rope_scaling: ParseDeepseek.
  if (f.Has("rope_scaling")) return f.Error("rope_scaling", "rope scaling is not supported");
  if (arch == Arch::kMixtral) {
    if (f.Has("sliding_window")) {
      return f.Error("sliding_window", "sliding-window attention is not supported");
    }
  } else {
    ASSIGN_OR_RETURN(bool sliding, f.Bool("use_sliding_window", false));
    if (sliding) return f.Error("use_sliding_window", "sliding-window attention is not supported");
  }
  return absl::OkStatus();
}

absl::Status ParseCommon(const JsonFields& f, ModelConfig& c) {
  ASSIGN_OR_RETURN(c.vocab_size, f.Int("vocab_size", {}, 1, kMaxDim * 4));
  ASSIGN_OR_RETURN(c.hidden_size, f.Int("hidden_size", {}, 1, kMaxDim));
  ASSIGN_OR_RETURN(c.num_layers, f.Int("num_hidden_layers", {}, 1, 4096));
  ASSIGN_OR_RETURN(c.num_heads, f.Int("num_attention_heads", {}, 1, 4096));
  ASSIGN_OR_RETURN(c.num_kv_heads, f.Int("num_key_value_heads", c.num_heads, 1, 4096));
  if (c.num_heads % c.num_kv_heads != 0) {
    return f.Error(
        "num_key_value_heads",
        absl::StrCat(c.num_kv_heads, " does not divide num_attention_heads ", c.num_heads));
  }
  if (!IsDeepseek(c.arch)) {  // MLA's head sizes: ParseDeepseek.
    int default_head_dim = c.hidden_size / c.num_heads;
    ASSIGN_OR_RETURN(c.head_dim, f.Int("head_dim", default_head_dim, 2, 4096));
    if (c.head_dim % 2 != 0) return f.Error("head_dim", "must be even for RoPE");
    c.v_head_dim = c.head_dim;
  }
  ASSIGN_OR_RETURN(double eps, f.Number("rms_norm_eps", c.arch == Arch::kMixtral ? 1e-5 : 1e-6));
  if (eps <= 0) return f.Error("rms_norm_eps", "must be positive");
  c.rms_norm_eps = static_cast<float>(eps);
  ASSIGN_OR_RETURN(c.rope_theta, f.Number("rope_theta", c.arch == Arch::kMixtral ? 1e6 : 10000.0));
  if (c.rope_theta <= 1.0) return f.Error("rope_theta", "must be > 1");
  ASSIGN_OR_RETURN(c.max_position_embeddings,
                   f.Int("max_position_embeddings", 32768, 1, INT32_MAX));
  ASSIGN_OR_RETURN(c.tie_word_embeddings, f.Bool("tie_word_embeddings", false));
  ASSIGN_OR_RETURN(std::vector<int64_t> eos, f.IntOrIntList("eos_token_id"));
  for (int64_t id : eos) {
    if (id < 0 || id >= c.vocab_size) {
      return f.Error("eos_token_id", absl::StrCat(id, " is outside the vocabulary"));
    }
    c.eos_token_ids.push_back(static_cast<int32_t>(id));
  }
  return absl::OkStatus();
}

absl::Status ParseQwen(const JsonFields& f, const nlohmann::json& j, ModelConfig& c) {
  ASSIGN_OR_RETURN(c.num_experts, f.Int("num_experts", {}, 1, 65536));
  ASSIGN_OR_RETURN(c.top_k, f.Int("num_experts_per_tok", {}, 1, c.num_experts));
  ASSIGN_OR_RETURN(c.moe_intermediate_size, f.Int("moe_intermediate_size", {}, 1, kMaxDim));
  ASSIGN_OR_RETURN(c.norm_topk_prob, f.Bool("norm_topk_prob", false));
  ASSIGN_OR_RETURN(c.decoder_sparse_step, f.Int("decoder_sparse_step", 1, 1, 4096));
  ASSIGN_OR_RETURN(c.intermediate_size, f.Int("intermediate_size", 0, 0, kMaxDim));
  if (f.Has("mlp_only_layers")) {
    const nlohmann::json& list = j["mlp_only_layers"];
    if (!list.is_array()) return f.Error("mlp_only_layers", "expected a list of layer indices");
    for (const auto& item : list) {
      if (!item.is_number_integer() || item.get<int64_t>() < 0 ||
          item.get<int64_t>() >= c.num_layers) {
        return f.Error("mlp_only_layers",
                       absl::StrCat("expected layer indices in [0, ", c.num_layers, ")"));
      }
      c.mlp_only_layers.push_back(item.get<int>());
    }
  }
  if (c.arch == Arch::kQwen3Moe) {
    c.qk_norm = true;
    ASSIGN_OR_RETURN(c.attention_bias, f.Bool("attention_bias", false));
  } else {
    c.attention_bias = true;  // Qwen2MoeAttention always has q/k/v biases.
    ASSIGN_OR_RETURN(c.shared_expert_intermediate_size,
                     f.Int("shared_expert_intermediate_size", {}, 0, kMaxDim));
    c.shared_expert_gated = true;
  }
  for (int layer = 0; layer < c.num_layers; ++layer) {
    if (!c.IsMoeLayer(layer) && c.intermediate_size <= 0) {
      return f.Error("intermediate_size",
                     absl::StrCat("layer ", layer, " is dense but intermediate_size is not set"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseMixtral(const JsonFields& f, ModelConfig& c) {
  ASSIGN_OR_RETURN(c.num_experts, f.Int("num_local_experts", {}, 1, 65536));
  ASSIGN_OR_RETURN(c.top_k, f.Int("num_experts_per_tok", {}, 1, c.num_experts));
  ASSIGN_OR_RETURN(c.moe_intermediate_size, f.Int("intermediate_size", {}, 1, kMaxDim));
  c.norm_topk_prob = true;  // Mixtral softmaxes the top-k logits: the same as renormalising.
  ASSIGN_OR_RETURN(c.attention_bias, f.Bool("attention_bias", false));
  if (c.attention_bias) return f.Error("attention_bias", "mixtral has no attention biases");
  return absl::OkStatus();
}

}  // namespace

absl::string_view ArchName(Arch arch) {
  switch (arch) {
    case Arch::kQwen3Moe:
      return "qwen3_moe";
    case Arch::kQwen2Moe:
      return "qwen2_moe";
    case Arch::kMixtral:
      return "mixtral";
    case Arch::kDeepseekV2:
      return "deepseek_v2";
    case Arch::kDeepseekV3:
      return "deepseek_v3";
  }
  return "unknown";
}

absl::StatusOr<Arch> ParseArch(absl::string_view model_type) {
  for (Arch arch :
       {Arch::kQwen3Moe, Arch::kQwen2Moe, Arch::kMixtral, Arch::kDeepseekV2, Arch::kDeepseekV3}) {
    if (model_type == ArchName(arch)) return arch;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "config.json: model_type: '", model_type,
      "' is not supported (supported: qwen3_moe, qwen2_moe, mixtral, deepseek_v2, deepseek_v3)"));
}

bool ModelConfig::IsMoeLayer(int layer) const {
  if (arch == Arch::kMixtral) return true;
  if (IsDeepseek(arch)) {
    return num_experts > 0 && layer >= first_k_dense_replace && layer % moe_layer_freq == 0;
  }
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end()) {
    return false;
  }
  return num_experts > 0 && (layer + 1) % decoder_sparse_step == 0;
}

KvShape ModelConfig::kv_shape() const {
  if (mla) return {mla_dims.kv_lora_rank + mla_dims.qk_rope_head_dim, 0};
  return {kv_size(), kv_size()};
}

std::vector<int> ModelConfig::MoeLayers() const {
  std::vector<int> layers;
  for (int i = 0; i < num_layers; ++i) {
    if (IsMoeLayer(i)) layers.push_back(i);
  }
  return layers;
}

absl::StatusOr<ModelConfig> ParseModelConfig(absl::string_view json_text) {
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json_text, "config.json"));
  if (!j.is_object()) return absl::InvalidArgumentError("config.json: expected a JSON object");
  JsonFields f(j, "config.json");
  ASSIGN_OR_RETURN(std::string model_type, f.String("model_type"));
  ModelConfig c;
  ASSIGN_OR_RETURN(c.arch, ParseArch(model_type));
  RETURN_IF_ERROR(RejectUnsupported(f, c.arch));
  RETURN_IF_ERROR(ParseCommon(f, c));
  RETURN_IF_ERROR(ParseQuantization(j, c));
  if (c.arch == Arch::kMixtral) {
    RETURN_IF_ERROR(ParseMixtral(f, c));
  } else if (IsDeepseek(c.arch)) {
    RETURN_IF_ERROR(ParseDeepseek(f, j, c));
  } else {
    RETURN_IF_ERROR(ParseQwen(f, j, c));
  }
  return c;
}

absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& dir) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(JoinPath(dir, "config.json")));
  auto config = ParseModelConfig(text);
  if (!config.ok()) {
    return absl::Status(config.status().code(), absl::StrCat(dir, "/", config.status().message()));
  }
  return config;
}

}  // namespace semmoe::engine::model
