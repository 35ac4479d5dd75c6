#include "engine/model/testing/tiny_model.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file.h"
#include "common/status_macros.h"
#include "engine/model/testing/random_draws.h"
#include "engine/model/weights.h"
#include "engine/text/byte_level.h"
#include "engine/text/pretokenizer.h"
#include "kernels/safetensors.h"
#include "nlohmann/json.hpp"

namespace semmoe::testing {
namespace {

using engine::model::Arch;
using kernels::SafetensorsWriter;

constexpr char kTrainingText[] =
    "The engine serves the model to every user who sends a request. Each request is split into "
    "tokens, and the tokens are routed to the experts that know them best. When the experts live "
    "on the same device as the tokens, the network stays quiet and the answers come back sooner. "
    "The planner reads the traces, learns which tokens go to which experts, and writes a new "
    "placement into the database. The router then sends each request to the rank that holds the "
    "experts it needs. This is the whole idea: put the data and the experts together.\n"
    "int main(int argc, char** argv) { return run(argc, argv); }\n"
    "def forward(self, x):\n    return self.down(self.act(self.gate(x)) * self.up(x))\n";

// Learns `num_merges` byte-level BPE merges from kTrainingText (most frequent pair first; ties by
// the pair's bytes), returning them as (left, right) raw-byte strings.
std::vector<std::pair<std::string, std::string>> LearnMerges(int num_merges) {
  std::string text = kTrainingText;
  auto cps = engine::model::DecodeUtf8(text);
  std::map<std::vector<std::string>, int> words;
  for (const auto& piece : engine::model::PretokenizeQwen2(*cps)) {
    size_t begin = (*cps)[piece.begin].byte_offset;
    size_t end = (*cps)[piece.end - 1].byte_offset + (*cps)[piece.end - 1].byte_length;
    std::vector<std::string> symbols;
    for (size_t i = begin; i < end; ++i) symbols.push_back(text.substr(i, 1));
    ++words[symbols];
  }
  std::vector<std::pair<std::string, std::string>> merges;
  while (static_cast<int>(merges.size()) < num_merges) {
    std::map<std::pair<std::string, std::string>, int> pairs;
    for (const auto& [symbols, count] : words) {
      for (size_t i = 0; i + 1 < symbols.size(); ++i) pairs[{symbols[i], symbols[i + 1]}] += count;
    }
    if (pairs.empty()) break;
    auto best = pairs.begin();
    for (auto it = pairs.begin(); it != pairs.end(); ++it) {
      if (it->second > best->second) best = it;
    }
    merges.push_back(best->first);
    std::map<std::vector<std::string>, int> next;
    for (const auto& [symbols, count] : words) {
      std::vector<std::string> merged;
      for (size_t i = 0; i < symbols.size(); ++i) {
        if (i + 1 < symbols.size() && symbols[i] == best->first.first &&
            symbols[i + 1] == best->first.second) {
          merged.push_back(symbols[i] + symbols[i + 1]);
          ++i;
        } else {
          merged.push_back(symbols[i]);
        }
      }
      next[merged] += count;
    }
    words = std::move(next);
  }
  return merges;
}

nlohmann::ordered_json TokenizerJson(const TinyModelOptions& o) {
  using engine::model::BytesToTokenText;
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (int b = 0; b < 256; ++b) vocab[BytesToTokenText(std::string(1, static_cast<char>(b)))] = b;
  nlohmann::ordered_json merges = nlohmann::ordered_json::array();
  int next_id = 256;
  for (const auto& [left, right] : LearnMerges(o.num_merges)) {
    std::string merged = BytesToTokenText(left + right);
    if (vocab.contains(merged)) continue;
    vocab[merged] = next_id++;
    merges.push_back(BytesToTokenText(left) + " " + BytesToTokenText(right));
  }
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    added.push_back({{"id", next_id++},
                     {"content", special},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  nlohmann::ordered_json byte_level = {{"type", "ByteLevel"},
                                       {"add_prefix_space", false},
                                       {"trim_offsets", false},
                                       {"use_regex", false}};
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", std::string(engine::model::kQwen2PretokenizerPattern)}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          byte_level}}}},
      {"post_processor", byte_level},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", merges}}},
  };
}

void DeepseekConfig(const TinyModelOptions& o, nlohmann::ordered_json& c) {
  const TinyModelOptions::Deepseek& d = o.deepseek;
  const bool v3 = o.arch == Arch::kDeepseekV3;
  c["architectures"] = {v3 ? "DeepseekV3ForCausalLM" : "DeepseekV2ForCausalLM"};
  c["model_type"] = v3 ? "deepseek_v3" : "deepseek_v2";
  c["q_lora_rank"] = d.q_lora_rank > 0 ? nlohmann::ordered_json(d.q_lora_rank) : nullptr;
  c["kv_lora_rank"] = d.kv_lora_rank;
  c["qk_nope_head_dim"] = d.qk_nope_head_dim;
  c["qk_rope_head_dim"] = d.qk_rope_head_dim;
  c["v_head_dim"] = d.v_head_dim;
  c["attention_bias"] = false;
  c["n_routed_experts"] = o.num_experts;
  c["num_experts_per_tok"] = o.top_k;
  c["n_shared_experts"] = d.n_shared_experts;
  c["moe_intermediate_size"] = o.moe_intermediate_size;
  c["intermediate_size"] = o.intermediate_size;
  c["first_k_dense_replace"] = d.first_k_dense_replace;
  c["moe_layer_freq"] = d.moe_layer_freq;
  c["scoring_func"] = !d.scoring_func.empty() ? d.scoring_func : v3 ? "sigmoid" : "softmax";
  c["topk_method"] = !d.topk_method.empty() ? d.topk_method
                     : v3                   ? "noaux_tc"
                                            : "group_limited_greedy";
  c["n_group"] = d.n_group;
  c["topk_group"] = d.topk_group;
  c["norm_topk_prob"] = o.norm_topk_prob;
  c["routed_scaling_factor"] = d.routed_scaling_factor;
  if (v3) c["rope_interleave"] = d.rope_interleave;
  if (d.yarn) {
    c["rope_scaling"] = {{"type", "yarn"},
                         {"factor", 4},
                         {"original_max_position_embeddings", o.max_position_embeddings / 4},
                         {"beta_fast", 32},
                         {"beta_slow", 1},
                         {"mscale", 0.707},
                         {"mscale_all_dim", 0.707}};
  }
}

// The MLA projections of layer prefix `a` ("model.layers.i.self_attn.").
template <typename Add>
absl::Status AddMla(const engine::model::ModelConfig& c, const std::string& a, float s, Add& add) {
  const engine::model::MlaConfig& m = c.mla_dims;
  const int64_t h = c.hidden_size, heads = c.num_heads;
  if (m.q_lora_rank > 0) {
    RETURN_IF_ERROR(add(a + "q_a_proj.weight", {m.q_lora_rank, h}, 0, s));
    RETURN_IF_ERROR(add(a + "q_a_layernorm.weight", {m.q_lora_rank}, 1, 0.1f));
    RETURN_IF_ERROR(add(a + "q_b_proj.weight", {c.q_size(), m.q_lora_rank}, 0, s));
  } else {
    RETURN_IF_ERROR(add(a + "q_proj.weight", {c.q_size(), h}, 0, s));
  }
  RETURN_IF_ERROR(
      add(a + "kv_a_proj_with_mqa.weight", {m.kv_lora_rank + m.qk_rope_head_dim, h}, 0, s));
  RETURN_IF_ERROR(add(a + "kv_a_layernorm.weight", {m.kv_lora_rank}, 1, 0.1f));
  RETURN_IF_ERROR(add(a + "kv_b_proj.weight",
                      {heads * (m.qk_nope_head_dim + c.v_head_dim), m.kv_lora_rank}, 0, s));
  return add(a + "o_proj.weight", {h, c.attn_out_size()}, 0, s);
}

// q/k/v/o projections (with biases and q/k norms where the config has them).
template <typename Add>
absl::Status AddAttention(const engine::model::ModelConfig& c, const std::string& a, float s,
                          Add& add) {
  const int64_t h = c.hidden_size;
  RETURN_IF_ERROR(add(a + "q_proj.weight", {c.q_size(), h}, 0, s));
  RETURN_IF_ERROR(add(a + "k_proj.weight", {c.kv_size(), h}, 0, s));
  RETURN_IF_ERROR(add(a + "v_proj.weight", {c.kv_size(), h}, 0, s));
  RETURN_IF_ERROR(add(a + "o_proj.weight", {h, c.q_size()}, 0, s));
  if (c.attention_bias) {
    RETURN_IF_ERROR(add(a + "q_proj.bias", {c.q_size()}, 0, s));
    RETURN_IF_ERROR(add(a + "k_proj.bias", {c.kv_size()}, 0, s));
    RETURN_IF_ERROR(add(a + "v_proj.bias", {c.kv_size()}, 0, s));
  }
  if (c.qk_norm) {
    RETURN_IF_ERROR(add(a + "q_norm.weight", {c.head_dim}, 1, 0.1f));
    RETURN_IF_ERROR(add(a + "k_norm.weight", {c.head_dim}, 1, 0.1f));
  }
  return absl::OkStatus();
}

// Which tensors an FP8 release stores in F8_E4M3: the 2-D projection weights; the embeddings,
// the LM head and the routers' gates stay in the model's dtype (DeepSeek-V3, Qwen3 FP8).
bool QuantizedInFp8(const std::string& name, const std::vector<int64_t>& shape) {
  if (shape.size() != 2 || !absl::EndsWith(name, ".weight")) return false;
  return name != "model.embed_tokens.weight" && name != "lm_head.weight" &&
         !absl::EndsWith(name, ".gate.weight") && !absl::EndsWith(name, "shared_expert_gate.weight");
}

struct Fp8Blocks {
  std::string codes;           // [rows, cols] F8_E4M3 bytes
  std::vector<float> scales;   // [scale_rows, scale_cols]: w ≈ code · scale of its block
  int64_t scale_rows = 0, scale_cols = 0;
};

// Per block (edge blocks partial): scale = amax / 448 (E4M3's largest finite value), each value
// / scale cast to E4M3 — what DeepSeek's weight quantization does.
Fp8Blocks QuantizeFp8(const std::vector<float>& w, int64_t rows, int64_t cols, int64_t br,
                      int64_t bc) {
  Fp8Blocks q;
  q.scale_rows = (rows + br - 1) / br, q.scale_cols = (cols + bc - 1) / bc;
  q.scales.assign(q.scale_rows * q.scale_cols, 0.0f);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      float& amax = q.scales[(i / br) * q.scale_cols + j / bc];
      amax = std::max(amax, std::fabs(w[i * cols + j]));
    }
  }
  for (float& s : q.scales) s = s > 0 ? s / 448.0f : 1.0f;
  q.codes.resize(w.size());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const float scale = q.scales[(i / br) * q.scale_cols + j / bc];
      q.codes[i * cols + j] = static_cast<char>(kernels::F32ToF8E4M3(w[i * cols + j] / scale).bits);
    }
  }
  return q;
}

nlohmann::ordered_json ConfigJson(const TinyModelOptions& o, int eos) {
  nlohmann::ordered_json c;
  c["vocab_size"] = o.vocab_size;
  c["hidden_size"] = o.hidden_size;
  c["num_hidden_layers"] = o.num_layers;
  c["num_attention_heads"] = o.num_heads;
  c["num_key_value_heads"] = o.num_kv_heads;
  c["rms_norm_eps"] = 1e-6;
  c["rope_theta"] = o.rope_theta;
  c["rope_scaling"] = nullptr;
  c["max_position_embeddings"] = o.max_position_embeddings;
  c["tie_word_embeddings"] = o.tie_word_embeddings;
  c["hidden_act"] = "silu";
  c["bos_token_id"] = eos;
  c["eos_token_id"] = eos;
  c["torch_dtype"] = o.dtype == kernels::DType::kF32   ? "float32"
                     : o.dtype == kernels::DType::kF16 ? "float16"
                                                       : "bfloat16";
  if (o.fp8_block_rows > 0 && !o.fp8_dequantized) {  // As DeepSeek-V3's config.json has it.
    c["quantization_config"] = {{"activation_scheme", "dynamic"},
                                {"fmt", "e4m3"},
                                {"quant_method", "fp8"},
                                {"weight_block_size", {o.fp8_block_rows, o.fp8_block_cols}}};
  }
  switch (o.arch) {
    case Arch::kQwen3Moe:
      c["architectures"] = {"Qwen3MoeForCausalLM"};
      c["model_type"] = "qwen3_moe";
      c["head_dim"] = o.head_dim;
      c["attention_bias"] = false;
      break;
    case Arch::kQwen2Moe:
      c["architectures"] = {"Qwen2MoeForCausalLM"};
      c["model_type"] = "qwen2_moe";
      c["shared_expert_intermediate_size"] = o.shared_expert_intermediate_size;
      break;
    case Arch::kDeepseekV2:
    case Arch::kDeepseekV3:
      DeepseekConfig(o, c);
      return c;
    case Arch::kMixtral:
      c["architectures"] = {"MixtralForCausalLM"};
      c["model_type"] = "mixtral";
      c["num_local_experts"] = o.num_experts;
      c["num_experts_per_tok"] = o.top_k;
      c["intermediate_size"] = o.moe_intermediate_size;
      c["sliding_window"] = nullptr;
      c["router_aux_loss_coef"] = 0.02;
      return c;
  }
  c["num_experts"] = o.num_experts;
  c["num_experts_per_tok"] = o.top_k;
  c["moe_intermediate_size"] = o.moe_intermediate_size;
  c["intermediate_size"] = o.intermediate_size;
  c["norm_topk_prob"] = o.norm_topk_prob;
  c["decoder_sparse_step"] = 1;
  c["mlp_only_layers"] = o.mlp_only_layers;
  c["use_sliding_window"] = false;
  c["sliding_window"] = nullptr;
  return c;
}

}  // namespace

absl::Status WriteTinyModel(const TinyModelOptions& options, const std::string& dir) {
  TinyModelOptions o = options;
  if (o.num_merges < 0) return absl::InvalidArgumentError("num_merges must be >= 0");
  nlohmann::ordered_json tokenizer = TokenizerJson(o);
  const int tokenizer_ids = static_cast<int>(tokenizer["model"]["vocab"].size()) + 3;
  if (o.vocab_size == 0) o.vocab_size = tokenizer_ids;
  if (o.vocab_size < tokenizer_ids) {
    return absl::InvalidArgumentError(
        absl::StrCat("vocab_size ", o.vocab_size, " < the tokenizer's ", tokenizer_ids, " ids"));
  }
  const bool deepseek = engine::model::IsDeepseek(o.arch);
  if (o.arch != Arch::kQwen3Moe && !deepseek && o.head_dim * o.num_heads != o.hidden_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(engine::model::ArchName(o.arch), " needs head_dim × heads == hidden_size (",
                     o.head_dim, " × ", o.num_heads, " != ", o.hidden_size, ")"));
  }
  if (o.num_shards < 1) return absl::InvalidArgumentError("num_shards must be ≥ 1");
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create ", dir));
  }
  const int eos = tokenizer["added_tokens"][0]["id"];
  nlohmann::ordered_json config = ConfigJson(o, eos);
  // Parse our own config back: the same validation every user checkpoint gets.
  ASSIGN_OR_RETURN(engine::model::ModelConfig c, engine::model::ParseModelConfig(config.dump()));

  RandomDraws draws(o.seed);
  std::vector<SafetensorsWriter> shards(o.num_shards);
  int tensor_index = 0;
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float mean,
                 float std) -> absl::Status {
    size_t n = 1;
    for (int64_t d : shape) n *= d;
    const int shard = tensor_index++ % o.num_shards;
    weight_map[name] = absl::StrFormat("model-%05d-of-%05d.safetensors", shard + 1, o.num_shards);
    std::vector<float> values(n);
    draws.FillNormal(values.data(), static_cast<int64_t>(n), mean, std);
    if (o.fp8_block_rows > 0 && QuantizedInFp8(name, shape)) {
      Fp8Blocks q = QuantizeFp8(values, shape[0], shape[1], o.fp8_block_rows, o.fp8_block_cols);
      if (o.fp8_dequantized) {
        for (int64_t i = 0; i < shape[0]; ++i) {
          for (int64_t j = 0; j < shape[1]; ++j) {
            const size_t at = i * shape[1] + j;
            values[at] = kernels::F8E4M3ToF32(kernels::F8E4M3{static_cast<uint8_t>(q.codes[at])}) *
                         q.scales[(i / o.fp8_block_rows) * q.scale_cols + j / o.fp8_block_cols];
          }
        }
        return shards[shard].AddF32(name, kernels::DType::kF32, shape, std::move(values));
      }
      weight_map[name + "_scale_inv"] = weight_map[name];
      RETURN_IF_ERROR(shards[shard].AddF32(name + "_scale_inv", kernels::DType::kF32,
                                           {q.scale_rows, q.scale_cols}, std::move(q.scales)));
      return shards[shard].Add(name, kernels::DType::kF8E4M3, shape, std::move(q.codes));
    }
    return shards[shard].AddF32(name, o.dtype, shape, std::move(values));
  };
  const float s = o.init_std;
  const int64_t h = c.hidden_size;
  RETURN_IF_ERROR(add("model.embed_tokens.weight", {c.vocab_size, h}, 0, 1.0f));
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = absl::StrCat("model.layers.", i, ".");
    RETURN_IF_ERROR(add(p + "input_layernorm.weight", {h}, 1, 0.1f));
    RETURN_IF_ERROR(add(p + "post_attention_layernorm.weight", {h}, 1, 0.1f));
    if (c.mla) {
      RETURN_IF_ERROR(AddMla(c, p + "self_attn.", s, add));
    } else {
      RETURN_IF_ERROR(AddAttention(c, p + "self_attn.", s, add));
    }
    auto mlp = [&](const std::string& prefix, const std::vector<std::string>& names,
                   int64_t inter) -> absl::Status {
      RETURN_IF_ERROR(add(prefix + names[0] + ".weight", {inter, h}, 0, s));
      RETURN_IF_ERROR(add(prefix + names[1] + ".weight", {inter, h}, 0, s));
      return add(prefix + names[2] + ".weight", {h, inter}, 0, s);
    };
    if (!c.IsMoeLayer(i)) {
      RETURN_IF_ERROR(mlp(p + "mlp.", {"gate_proj", "up_proj", "down_proj"}, c.intermediate_size));
      continue;
    }
    const std::string block = c.arch == Arch::kMixtral ? p + "block_sparse_moe." : p + "mlp.";
    RETURN_IF_ERROR(add(block + "gate.weight", {c.num_experts, h}, 0, 0.5f));
    if (c.topk_method == engine::model::TopkMethod::kNoauxTc) {
      RETURN_IF_ERROR(add(block + "gate.e_score_correction_bias", {c.num_experts}, 0, 0.05f));
    }
    for (int e = 0; e < c.num_experts; ++e) {
      RETURN_IF_ERROR(mlp(engine::model::ExpertPrefix(c, i, e),
                          engine::model::ExpertProjectionNames(c), c.moe_intermediate_size));
    }
    if (c.shared_expert_intermediate_size > 0) {
      const std::string shared = c.shared_expert_gated ? "shared_expert." : "shared_experts.";
      RETURN_IF_ERROR(mlp(block + shared, {"gate_proj", "up_proj", "down_proj"},
                          c.shared_expert_intermediate_size));
      if (c.shared_expert_gated) {
        RETURN_IF_ERROR(add(block + "shared_expert_gate.weight", {1, h}, 0, s));
      }
    }
  }
  RETURN_IF_ERROR(add("model.norm.weight", {h}, 1, 0.1f));
  if (!c.tie_word_embeddings) RETURN_IF_ERROR(add("lm_head.weight", {c.vocab_size, h}, 0, s));

  if (o.num_shards == 1) {
    RETURN_IF_ERROR(WriteFileAtomically(JoinPath(dir, "model.safetensors"), shards[0].Serialize()));
  } else {
    for (int i = 0; i < o.num_shards; ++i) {
      RETURN_IF_ERROR(WriteFileAtomically(
          JoinPath(dir, absl::StrFormat("model-%05d-of-%05d.safetensors", i + 1, o.num_shards)),
          shards[i].Serialize()));
    }
    nlohmann::ordered_json index = {{"metadata", {{"total_parameters", tensor_index}}},
                                    {"weight_map", weight_map}};
    RETURN_IF_ERROR(
        WriteFileAtomically(JoinPath(dir, "model.safetensors.index.json"), index.dump(2)));
  }
  RETURN_IF_ERROR(WriteFileAtomically(JoinPath(dir, "config.json"), config.dump(2) + "\n"));
  nlohmann::ordered_json generation = {
      {"bos_token_id", eos}, {"eos_token_id", eos}, {"do_sample", false}};
  RETURN_IF_ERROR(
      WriteFileAtomically(JoinPath(dir, "generation_config.json"), generation.dump(2) + "\n"));
  RETURN_IF_ERROR(WriteFileAtomically(JoinPath(dir, "tokenizer.json"), tokenizer.dump(2) + "\n"));
  // The ChatML chat template of Qwen's instruct models, over the same special tokens, with
  // their tool use in hermes form (the tools listed in a system turn, calls as <tool_call>
  // JSON, results as <tool_response> user turns); without tools, plain ChatML.
  const nlohmann::ordered_json tokenizer_config = {
      {"chat_template",
       "{%- if tools %}{{ '<|im_start|>system\\n# Tools\\n\\n<tools>' }}{% for tool in tools %}"
       "{{ '\\n' + (tool | tojson) }}{% endfor %}{{ '\\n</tools>\\n\\nFor each function call, "
       "return a json object with function name and arguments within <tool_call></tool_call> "
       "XML tags.<|im_end|>\\n' }}{% endif %}"
       "{%- for message in messages %}{% if message['role'] == 'tool' %}"
       "{{ '<|im_start|>user\\n<tool_response>\\n' + message['content'] + "
       "'\\n</tool_response><|im_end|>\\n' }}{% else %}"
       "{{ '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') }}"
       "{% for call in message['tool_calls'] or [] %}{{ '<tool_call>\\n{\"name\": \"' + "
       "call['function']['name'] + '\", \"arguments\": ' + call['function']['arguments'] + "
       "'}\\n</tool_call>' }}{% endfor %}{{ '<|im_end|>\\n' }}{% endif %}{% endfor %}"
       "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"},
      {"bos_token", nullptr},
      {"eos_token", tokenizer["added_tokens"][0]["content"]}};
  return WriteFileAtomically(JoinPath(dir, "tokenizer_config.json"),
                             tokenizer_config.dump(2) + "\n");
}

}  // namespace semmoe::testing
