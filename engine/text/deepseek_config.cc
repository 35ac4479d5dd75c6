#include "engine/text/deepseek_config.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace semmoe::engine::model {
namespace {

constexpr int64_t kMaxDim = 1 << 20;

absl::Status ParseMla(const JsonFields& f, ModelConfig& c) {
  c.mla = true;
  MlaConfig& m = c.mla_dims;
  ASSIGN_OR_RETURN(m.q_lora_rank, f.Int("q_lora_rank", 0, 0, kMaxDim));  // null: plain q_proj.
  ASSIGN_OR_RETURN(m.kv_lora_rank, f.Int("kv_lora_rank", {}, 1, kMaxDim));
  ASSIGN_OR_RETURN(m.qk_nope_head_dim, f.Int("qk_nope_head_dim", {}, 1, 4096));
  ASSIGN_OR_RETURN(m.qk_rope_head_dim, f.Int("qk_rope_head_dim", {}, 2, 4096));
  if (m.qk_rope_head_dim % 2 != 0) return f.Error("qk_rope_head_dim", "must be even for RoPE");
  ASSIGN_OR_RETURN(c.v_head_dim, f.Int("v_head_dim", {}, 1, 4096));
  // The config's own `head_dim` (transformers writes qk_rope_head_dim there) is not the
  // attention head size.
  c.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
  ASSIGN_OR_RETURN(c.attention_bias, f.Bool("attention_bias", false));
  if (c.attention_bias) return f.Error("attention_bias", "MLA projection biases are not supported");
  ASSIGN_OR_RETURN(c.rope_interleave, f.Bool("rope_interleave", true));
  if (c.arch == Arch::kDeepseekV2 && !c.rope_interleave) {
    return f.Error("rope_interleave", "deepseek_v2 always uses interleaved RoPE");
  }
  return absl::OkStatus();
}

absl::Status ParseYarn(const JsonFields& f, const nlohmann::json& j, ModelConfig& c) {
  if (!f.Has("rope_scaling")) return absl::OkStatus();
  const nlohmann::json& rs = j["rope_scaling"];
  if (!rs.is_object()) return f.Error("rope_scaling", "expected an object or null");
  JsonFields r(rs, "config.json: rope_scaling");
  // The hub's DeepSeek configs say "type"; transformers writes "rope_type".
  ASSIGN_OR_RETURN(std::string type, r.String("rope_type", ""));
  if (type.empty()) {
    ASSIGN_OR_RETURN(type, r.String("type"));
  }
  if (type != "yarn") {
    return r.Error("type", absl::StrCat("'", type, "' is not supported (only yarn)"));
  }
  YarnConfig& y = c.yarn;
  y.enabled = true;
  ASSIGN_OR_RETURN(y.factor, r.Number("factor"));
  if (y.factor < 1.0) return r.Error("factor", "must be >= 1");
  ASSIGN_OR_RETURN(
      y.original_max_position_embeddings,
      r.Int("original_max_position_embeddings", c.max_position_embeddings, 1, INT32_MAX));
  ASSIGN_OR_RETURN(y.beta_fast, r.Number("beta_fast", 32.0));
  ASSIGN_OR_RETURN(y.beta_slow, r.Number("beta_slow", 1.0));
  if (y.beta_fast <= 0 || y.beta_slow <= 0 || y.beta_slow > y.beta_fast) {
    return r.Error("beta_fast", "needs 0 < beta_slow <= beta_fast");
  }
  // DeepSeek's DeepseekV2YarnRotaryEmbedding: mscale defaults to 1, mscale_all_dim to 0.
  ASSIGN_OR_RETURN(double mscale, r.Number("mscale", 1.0));
  ASSIGN_OR_RETURN(double mscale_all_dim, r.Number("mscale_all_dim", 0.0));
  y.attention_factor = YarnMscale(y.factor, mscale) / YarnMscale(y.factor, mscale_all_dim);
  if (r.Has("attention_factor")) {
    ASSIGN_OR_RETURN(y.attention_factor, r.Number("attention_factor"));
  }
  if (!(y.attention_factor > 0)) return r.Error("attention_factor", "must be positive");
  const double softmax = mscale_all_dim != 0 ? YarnMscale(y.factor, mscale_all_dim) : 1.0;
  y.softmax_mscale = softmax * softmax;
  return absl::OkStatus();
}

absl::StatusOr<ScoringFunc> ParseScoring(const JsonFields& f, Arch arch) {
  ASSIGN_OR_RETURN(std::string s,
                   f.String("scoring_func", arch == Arch::kDeepseekV3 ? "sigmoid" : "softmax"));
  if (s == "softmax") return ScoringFunc::kSoftmax;
  if (s == "sigmoid") return ScoringFunc::kSigmoid;
  return f.Error("scoring_func", absl::StrCat("'", s, "' is not supported (softmax, sigmoid)"));
}

absl::StatusOr<TopkMethod> ParseTopkMethod(const JsonFields& f, Arch arch) {
  ASSIGN_OR_RETURN(std::string s,
                   f.String("topk_method", arch == Arch::kDeepseekV3 ? "noaux_tc" : "greedy"));
  if (s == "greedy") return TopkMethod::kGreedy;
  if (s == "group_limited_greedy") return TopkMethod::kGroupLimitedGreedy;
  if (s == "noaux_tc") return TopkMethod::kNoauxTc;
  return f.Error(
      "topk_method",
      absl::StrCat("'", s, "' is not supported (greedy, group_limited_greedy, noaux_tc)"));
}

absl::Status ParseMoe(const JsonFields& f, ModelConfig& c) {
  ASSIGN_OR_RETURN(c.num_experts, f.Int("n_routed_experts", {}, 1, 65536));
  ASSIGN_OR_RETURN(c.top_k, f.Int("num_experts_per_tok", {}, 1, c.num_experts));
  ASSIGN_OR_RETURN(c.moe_intermediate_size, f.Int("moe_intermediate_size", {}, 1, kMaxDim));
  ASSIGN_OR_RETURN(int shared, f.Int("n_shared_experts", 0, 0, 4096));
  c.shared_expert_intermediate_size = shared * c.moe_intermediate_size;
  c.shared_expert_gated = false;
  ASSIGN_OR_RETURN(c.first_k_dense_replace, f.Int("first_k_dense_replace", 0, 0, c.num_layers));
  ASSIGN_OR_RETURN(c.moe_layer_freq, f.Int("moe_layer_freq", 1, 1, 4096));
  ASSIGN_OR_RETURN(c.intermediate_size, f.Int("intermediate_size", 0, 0, kMaxDim));
  ASSIGN_OR_RETURN(c.norm_topk_prob, f.Bool("norm_topk_prob", false));
  ASSIGN_OR_RETURN(c.routed_scaling_factor, f.Number("routed_scaling_factor", 1.0));
  if (!(c.routed_scaling_factor > 0)) return f.Error("routed_scaling_factor", "must be positive");
  c.scale_after_norm = c.arch == Arch::kDeepseekV3;
  ASSIGN_OR_RETURN(c.scoring, ParseScoring(f, c.arch));
  ASSIGN_OR_RETURN(c.topk_method, ParseTopkMethod(f, c.arch));
  ASSIGN_OR_RETURN(c.n_group, f.Int("n_group", 1, 1, c.num_experts));
  ASSIGN_OR_RETURN(c.topk_group, f.Int("topk_group", 1, 1, c.n_group));
  if (c.num_experts % c.n_group != 0) {
    return f.Error("n_group",
                   absl::StrCat(c.n_group, " does not divide n_routed_experts ", c.num_experts));
  }
  const int group_size = c.num_experts / c.n_group;
  if (c.topk_method != TopkMethod::kGreedy && c.topk_group * group_size < c.top_k) {
    return f.Error("topk_group",
                   absl::StrCat(c.topk_group, " groups of ", group_size,
                                " experts cannot hold num_experts_per_tok ", c.top_k));
  }
  if (c.topk_method == TopkMethod::kNoauxTc && group_size < 2) {
    return f.Error("n_group", "noaux_tc scores a group by its top 2: groups need >= 2 experts");
  }
  for (int layer = 0; layer < c.num_layers; ++layer) {
    if (!c.IsMoeLayer(layer) && c.intermediate_size <= 0) {
      return f.Error("intermediate_size",
                     absl::StrCat("layer ", layer, " is dense but intermediate_size is not set"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

double YarnMscale(double scale, double m) {
  if (scale <= 1.0) return 1.0;
  return 0.1 * m * std::log(scale) + 1.0;
}

absl::Status ParseDeepseek(const JsonFields& f, const nlohmann::json& j, ModelConfig& c) {
  RETURN_IF_ERROR(ParseMla(f, c));
  RETURN_IF_ERROR(ParseYarn(f, j, c));
  return ParseMoe(f, c);
}

}  // namespace semmoe::engine::model
