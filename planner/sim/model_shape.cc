#include "planner/sim/model_shape.h"

#include "absl/strings/str_cat.h"
#include "common/json_fields.h"
#include "nlohmann/json.hpp"

namespace semmoe::planner::sim {

int ModelShape::num_moe_layers() const {
  int n = 0;
  for (bool m : moe_layer) n += m;
  return n;
}

absl::StatusOr<ModelShape> KnownShape(const std::string& name) {
  ModelShape s;
  s.name = name;
  if (name == "deepseek-v3") {
    // deepseek-ai/DeepSeek-V3 config.json: hidden 7168, 61 layers (first_k_dense_replace 3),
    // 128 heads, MLA (q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128),
    // 256 routed experts of 2048, 1 shared of 2048, top-8, dense MLP 18432, vocab 129280.
    const int64_t h = 7168, heads = 128, q_lora = 1536, kv_lora = 512, nope = 128, rope = 64,
                  v = 128;
    s.hidden = h;
    s.vocab = 129280;
    s.moe_layer.assign(61, true);
    for (int i = 0; i < 3; ++i) s.moe_layer[i] = false;
    s.attention_params = h * q_lora + q_lora * heads * (nope + rope) + h * (kv_lora + rope) +
                         kv_lora * heads * (nope + v) + heads * v * h;
    s.attention_heads = heads;
    s.qk_head_dim = nope + rope;
    s.v_head_dim = v;
    s.kv_values = kv_lora + rope;  // The latent and the rotary key (the engine's MLA cache).
    s.num_experts = 256;
    s.top_k = 8;
    s.expert_intermediate = 2048;
    s.shared_intermediate = 2048;
    s.dense_intermediate = 18432;
    return s;
  }
  if (name == "qwen3-235b") {
    // Qwen/Qwen3-235B-A22B config.json: hidden 4096, 94 layers all sparse, 64 query heads, 4 KV
    // heads of 128, 128 experts of 1536, top-8, no shared expert, vocab 151936.
    const int64_t h = 4096, heads = 64, kv_heads = 4, d = 128;
    s.hidden = h;
    s.vocab = 151936;
    s.moe_layer.assign(94, true);
    s.attention_params = h * heads * d + 2 * h * kv_heads * d + heads * d * h;
    s.attention_heads = heads;
    s.qk_head_dim = d;
    s.v_head_dim = d;
    s.kv_values = 2 * kv_heads * d;
    s.num_experts = 128;
    s.top_k = 8;
    s.expert_intermediate = 1536;
    s.dense_intermediate = 12288;  // config.json's intermediate_size (no dense layer uses it).
    return s;
  }
  return absl::NotFoundError(
      absl::StrCat("no built-in model shape \"", name, "\" (deepseek-v3, qwen3-235b)"));
}

std::vector<std::string> KnownShapes() { return {"deepseek-v3", "qwen3-235b"}; }

absl::Status CheckShape(const ModelShape& s) {
  auto bad = [&](absl::string_view field) {
    return absl::InvalidArgumentError(
        absl::StrCat("model shape ", s.name, ": ", field, " must be positive"));
  };
  if (s.hidden <= 0) return bad("hidden");
  if (s.vocab <= 0) return bad("vocab");
  if (s.moe_layer.empty()) return bad("layers");
  if (s.num_moe_layers() == 0) return bad("MoE layers");
  if (s.attention_params <= 0) return bad("attention_params");
  if (s.attention_heads <= 0 || s.qk_head_dim <= 0 || s.v_head_dim <= 0) return bad("heads");
  if (s.kv_values <= 0) return bad("kv_values");
  if (s.num_experts <= 0 || s.top_k <= 0) return bad("experts");
  if (s.expert_intermediate <= 0) return bad("expert_intermediate");
  if (s.top_k > s.num_experts) {
    return absl::InvalidArgumentError(absl::StrCat("model shape ", s.name, ": top_k ", s.top_k,
                                                   " > num_experts ", s.num_experts));
  }
  if (s.shared_intermediate < 0 || s.dense_intermediate < 0) return bad("MLP widths");
  return absl::OkStatus();
}

std::string ShapeToJson(const ModelShape& s) {
  return nlohmann::ordered_json{{"format", "semmoe-model-shape"},
                                {"name", s.name},
                                {"hidden", s.hidden},
                                {"vocab", s.vocab},
                                {"moe_layer", s.moe_layer},
                                {"attention_params", s.attention_params},
                                {"attention_heads", s.attention_heads},
                                {"qk_head_dim", s.qk_head_dim},
                                {"v_head_dim", s.v_head_dim},
                                {"kv_values", s.kv_values},
                                {"num_experts", s.num_experts},
                                {"top_k", s.top_k},
                                {"expert_intermediate", s.expert_intermediate},
                                {"shared_intermediate", s.shared_intermediate},
                                {"dense_intermediate", s.dense_intermediate}}
      .dump(2);
}

absl::StatusOr<ModelShape> ShapeFromJson(absl::string_view json, absl::string_view what) {
  const nlohmann::json j = ParseJsonOrDiscarded(json);
  if (!j.is_object() || j.value("format", "") != "semmoe-model-shape") {
    return absl::InvalidArgumentError(absl::StrCat(
        what,
        ": not a model shape (a JSON object with \"format\": \"semmoe-model-shape\", as "
        "simulate --print_shape writes)"));
  }
  ModelShape s;
  auto integer = [&](const char* key, auto& out) -> absl::Status {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || it->template get<int64_t>() < 0 ||
        it->template get<int64_t>() > (int64_t{1} << 40)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": \"", key, "\" must be a whole number from 0 to 2^40"));
    }
    out = static_cast<std::decay_t<decltype(out)>>(it->template get<int64_t>());
    return absl::OkStatus();
  };
  if (j.contains("name") && j["name"].is_string()) s.name = j["name"].get<std::string>();
  for (const auto& [key, field] :
       std::initializer_list<std::pair<const char*, int*>>{{"hidden", &s.hidden},
                                                           {"vocab", &s.vocab},
                                                           {"attention_heads", &s.attention_heads},
                                                           {"qk_head_dim", &s.qk_head_dim},
                                                           {"v_head_dim", &s.v_head_dim},
                                                           {"num_experts", &s.num_experts},
                                                           {"top_k", &s.top_k}}) {
    if (absl::Status st = integer(key, *field); !st.ok()) return st;
    if (*field > (1 << 30)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": \"", key, "\" is too large"));
    }
  }
  for (const auto& [key, field] : std::initializer_list<std::pair<const char*, int64_t*>>{
           {"attention_params", &s.attention_params},
           {"kv_values", &s.kv_values},
           {"expert_intermediate", &s.expert_intermediate},
           {"shared_intermediate", &s.shared_intermediate},
           {"dense_intermediate", &s.dense_intermediate}}) {
    if (absl::Status st = integer(key, *field); !st.ok()) return st;
  }
  const auto layers = j.find("moe_layer");
  if (layers == j.end() || !layers->is_array() || layers->empty() || layers->size() > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": \"moe_layer\" must be a list of 1 to 100000 booleans"));
  }
  for (const auto& l : *layers) {
    if (!l.is_boolean()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": \"moe_layer\" holds a non-boolean"));
    }
    s.moe_layer.push_back(l.get<bool>());
  }
  if (absl::Status st = CheckShape(s); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", st.message()));
  }
  return s;
}

}  // namespace semmoe::planner::sim
