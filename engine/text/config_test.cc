#include "engine/text/config.h"

#include <string>

#include "engine/text/testing/config_fuzz.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::model {
namespace {

using ::testing::HasSubstr;

// Field values as published for Qwen/Qwen3-30B-A3B (abridged to what the engine reads).
constexpr char kQwen3[] = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
  "vocab_size": 151936, "hidden_size": 2048, "num_hidden_layers": 48,
  "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "rope_scaling": null,
  "max_position_embeddings": 40960, "tie_word_embeddings": false, "attention_bias": false,
  "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
  "norm_topk_prob": true, "decoder_sparse_step": 1, "mlp_only_layers": [],
  "intermediate_size": 6144, "hidden_act": "silu", "use_sliding_window": false,
  "sliding_window": null, "eos_token_id": 151645, "bos_token_id": 151643})";

// Qwen/Qwen1.5-MoE-A2.7B.
constexpr char kQwen2[] = R"({
  "model_type": "qwen2_moe", "vocab_size": 151936, "hidden_size": 2048,
  "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "max_position_embeddings": 8192,
  "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
  "shared_expert_intermediate_size": 5632, "norm_topk_prob": false,
  "decoder_sparse_step": 1, "intermediate_size": 5632, "tie_word_embeddings": false,
  "eos_token_id": 151643})";

// mistralai/Mixtral-8x7B-v0.1.
constexpr char kMixtral[] = R"({
  "model_type": "mixtral", "vocab_size": 32000, "hidden_size": 4096,
  "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
  "intermediate_size": 14336, "num_local_experts": 8, "num_experts_per_tok": 2,
  "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": null,
  "max_position_embeddings": 32768, "router_aux_loss_coef": 0.02,
  "eos_token_id": 2, "bos_token_id": 1, "hidden_act": "silu"})";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(ConfigTest, ParsesQwen3Moe) {
  auto c = ParseModelConfig(kQwen3);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, Arch::kQwen3Moe);
  EXPECT_EQ(c->hidden_size, 2048);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->q_size(), 4096);  // heads × head_dim ≠ hidden: must come from head_dim.
  EXPECT_EQ(c->kv_size(), 512);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->attention_bias);
  EXPECT_EQ(c->num_experts, 128);
  EXPECT_EQ(c->top_k, 8);
  EXPECT_TRUE(c->norm_topk_prob);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_FLOAT_EQ(c->rms_norm_eps, 1e-6f);
  EXPECT_EQ(c->eos_token_ids, std::vector<int32_t>{151645});
  EXPECT_EQ(c->MoeLayers().size(), 48u);
}

TEST(ConfigTest, ParsesQwen2MoeWithSharedExpertAndDefaults) {
  auto c = ParseModelConfig(kQwen2);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, Arch::kQwen2Moe);
  EXPECT_EQ(c->head_dim, 128);  // hidden / heads when head_dim is absent.
  EXPECT_TRUE(c->attention_bias);
  EXPECT_FALSE(c->qk_norm);
  EXPECT_FALSE(c->norm_topk_prob);
  EXPECT_EQ(c->shared_expert_intermediate_size, 5632);
}

TEST(ConfigTest, ParsesMixtral) {
  auto c = ParseModelConfig(kMixtral);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, Arch::kMixtral);
  EXPECT_EQ(c->num_experts, 8);
  EXPECT_EQ(c->top_k, 2);
  EXPECT_EQ(c->moe_intermediate_size, 14336);
  EXPECT_TRUE(c->norm_topk_prob);
  EXPECT_EQ(c->num_kv_heads, 8);
  EXPECT_FLOAT_EQ(c->rms_norm_eps, 1e-5f);
}

TEST(ConfigTest, DenseLayersFromSparseStepAndMlpOnlyLayers) {
  std::string text = Replace(kQwen3, R"("decoder_sparse_step": 1, "mlp_only_layers": [])",
                             R"("decoder_sparse_step": 2, "mlp_only_layers": [3])");
  auto c = ParseModelConfig(text);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->IsMoeLayer(0));
  EXPECT_TRUE(c->IsMoeLayer(1));
  EXPECT_FALSE(c->IsMoeLayer(3));  // Listed in mlp_only_layers.
  EXPECT_TRUE(c->IsMoeLayer(5));
}

TEST(ConfigTest, EosMayBeAList) {
  auto c = ParseModelConfig(
      Replace(kQwen3, R"("eos_token_id": 151645)", R"("eos_token_id": [151645, 151643])"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{151645, 151643}));
}

struct BadConfig {
  std::string name;
  std::string text;
  std::string error;
};

class BadConfigTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(BadConfigTest, IsAClearError) {
  auto c = ParseModelConfig(GetParam().text);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, BadConfigTest,
    ::testing::Values(
        BadConfig{"unknown_arch", Replace(kQwen3, "\"qwen3_moe\"", "\"llama\""),
                  "model_type: 'llama' is not supported"},
        BadConfig{"no_model_type", R"({"hidden_size": 4})", "model_type: missing"},
        BadConfig{"bad_json", "{\"model_type\": \"qwen3_moe\",", "config.json: invalid JSON"},
        BadConfig{"not_object", "[1, 2]", "expected a JSON object"},
        BadConfig{"missing_experts", Replace(kQwen3, R"("num_experts": 128,)", ""),
                  "num_experts: missing"},
        BadConfig{"wrong_type",
                  Replace(kQwen3, R"("hidden_size": 2048)", R"("hidden_size": "2048")"),
                  "hidden_size: expected an integer, got string"},
        BadConfig{"negative", Replace(kQwen3, R"("hidden_size": 2048)", R"("hidden_size": -1)"),
                  "hidden_size: value -1 is outside"},
        BadConfig{"top_k_too_big",
                  Replace(kQwen3, R"("num_experts_per_tok": 8)", R"("num_experts_per_tok": 129)"),
                  "num_experts_per_tok: value 129 is outside"},
        BadConfig{"kv_heads",
                  Replace(kQwen3, R"("num_key_value_heads": 4)", R"("num_key_value_heads": 5)"),
                  "5 does not divide num_attention_heads 32"},
        BadConfig{"rope_scaling",
                  Replace(kQwen3, R"("rope_scaling": null)", R"("rope_scaling": {"type": "yarn"})"),
                  "rope_scaling: rope scaling is not supported"},
        BadConfig{"activation",
                  Replace(kQwen3, R"("hidden_act": "silu")", R"("hidden_act": "gelu")"),
                  "hidden_act: 'gelu' is not supported"},
        BadConfig{"mixtral_window",
                  Replace(kMixtral, R"("sliding_window": null)", R"("sliding_window": 4096)"),
                  "sliding_window"},
        BadConfig{"qwen2_no_shared",
                  Replace(kQwen2, R"("shared_expert_intermediate_size": 5632,)", ""),
                  "shared_expert_intermediate_size: missing"},
        BadConfig{"eos_out_of_vocab",
                  Replace(kMixtral, R"("eos_token_id": 2)", R"("eos_token_id": 32000)"),
                  "eos_token_id: 32000 is outside the vocabulary"},
        BadConfig{"mlp_only_out_of_range",
                  Replace(kQwen3, R"("mlp_only_layers": [])", R"("mlp_only_layers": [48])"),
                  "mlp_only_layers: expected layer indices in [0, 48)"}),
    [](const ::testing::TestParamInfo<BadConfig>& info) { return info.param.name; });

// Fuzz-style: random edits of real configs and every field set to each wrong JSON type give a
// Status — never an exception or a crash.
TEST(ConfigFuzzTest, CorruptedConfigsNeverCrash) {
  int rejected = 0;
  for (const char* base : {kQwen3, kQwen2, kMixtral}) rejected += testing::FuzzConfig(base, 5, 300);
  EXPECT_GT(rejected, 600);
}

}  // namespace
}  // namespace semmoe::engine::model
