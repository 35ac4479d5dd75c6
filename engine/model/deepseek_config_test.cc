// deepseek_v2 / deepseek_v3 config.json parsing: the published configs, the derived MLA and YaRN
// quantities, dense-layer placement and the errors.
#include "engine/text/deepseek_config.h"

#include <string>

#include "engine/forward/mla_rope.h"
#include "engine/text/config.h"
#include "engine/text/testing/config_fuzz.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::model {
namespace {

using ::testing::HasSubstr;

// deepseek-ai/DeepSeek-V2-Lite (the keys the engine reads, as published).
constexpr char kV2Lite[] = R"({
  "model_type": "deepseek_v2", "vocab_size": 102400, "hidden_size": 2048,
  "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
  "q_lora_rank": null, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
  "v_head_dim": 128, "n_routed_experts": 64, "num_experts_per_tok": 6, "n_shared_experts": 2,
  "moe_intermediate_size": 1408, "intermediate_size": 10944, "first_k_dense_replace": 1,
  "moe_layer_freq": 1, "topk_method": "greedy", "n_group": 1, "topk_group": 1,
  "norm_topk_prob": false, "routed_scaling_factor": 1.0, "scoring_func": "softmax",
  "aux_loss_alpha": 0.001, "seq_aux": true, "hidden_act": "silu", "attention_bias": false,
  "max_position_embeddings": 163840, "rope_theta": 10000, "rms_norm_eps": 1e-06,
  "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                   "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
                   "type": "yarn"},
  "tie_word_embeddings": false, "bos_token_id": 100000, "eos_token_id": 100001})";

// deepseek-ai/DeepSeek-V3 without its quantization_config (FP8: BlockScaledFp8IsAccepted).
constexpr char kV3[] = R"({
  "model_type": "deepseek_v3", "vocab_size": 129280, "hidden_size": 7168,
  "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
  "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
  "v_head_dim": 128, "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1,
  "moe_intermediate_size": 2048, "intermediate_size": 18432, "first_k_dense_replace": 3,
  "moe_layer_freq": 1, "topk_method": "noaux_tc", "n_group": 8, "topk_group": 4,
  "norm_topk_prob": true, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid",
  "num_nextn_predict_layers": 1, "hidden_act": "silu", "max_position_embeddings": 163840,
  "rope_theta": 10000, "rms_norm_eps": 1e-06,
  "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                   "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                   "type": "yarn"},
  "tie_word_embeddings": false, "bos_token_id": 0, "eos_token_id": 1})";

std::string Set(const char* base, const std::string& key, const nlohmann::json& value) {
  nlohmann::json j = nlohmann::json::parse(base);
  if (value.is_discarded()) {
    j.erase(key);
  } else {
    j[key] = value;
  }
  return j.dump();
}

TEST(DeepseekConfigTest, ParsesDeepseekV2Lite) {
  auto c = ParseModelConfig(kV2Lite);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, Arch::kDeepseekV2);
  EXPECT_TRUE(c->mla);
  EXPECT_EQ(c->mla_dims.q_lora_rank, 0);
  EXPECT_EQ(c->head_dim, 192);  // nope + rope, not hidden / heads (128).
  EXPECT_EQ(c->v_head_dim, 128);
  EXPECT_EQ(c->attn_out_size(), 16 * 128);
  EXPECT_EQ(c->kv_shape().key_size, 512 + 64);  // The latent and the rotary key.
  EXPECT_EQ(c->kv_shape().value_size, 0);
  EXPECT_TRUE(c->rope_interleave);
  EXPECT_EQ(c->scoring, ScoringFunc::kSoftmax);
  EXPECT_EQ(c->topk_method, TopkMethod::kGreedy);
  EXPECT_FALSE(c->scale_after_norm);
  EXPECT_EQ(c->shared_expert_intermediate_size, 2 * 1408);
  EXPECT_FALSE(c->shared_expert_gated);
  EXPECT_FALSE(c->IsMoeLayer(0));
  EXPECT_EQ(c->MoeLayers().size(), 26u);
  ASSERT_TRUE(c->yarn.enabled);
  EXPECT_EQ(c->yarn.original_max_position_embeddings, 4096);
  EXPECT_DOUBLE_EQ(c->yarn.attention_factor, 1.0);  // mscale == mscale_all_dim.
  const double m = 0.1 * 0.707 * std::log(40.0) + 1.0;
  EXPECT_NEAR(c->yarn.softmax_mscale, m * m, 1e-12);
}

TEST(DeepseekConfigTest, ParsesDeepseekV3) {
  auto c = ParseModelConfig(kV3);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, Arch::kDeepseekV3);
  EXPECT_EQ(c->mla_dims.q_lora_rank, 1536);
  EXPECT_EQ(c->scoring, ScoringFunc::kSigmoid);
  EXPECT_EQ(c->topk_method, TopkMethod::kNoauxTc);
  EXPECT_EQ(c->n_group, 8);
  EXPECT_EQ(c->topk_group, 4);
  EXPECT_TRUE(c->scale_after_norm);
  EXPECT_DOUBLE_EQ(c->routed_scaling_factor, 2.5);
  EXPECT_EQ(c->num_layers, 61);  // The MTP layer (num_nextn_predict_layers) is not served.
  EXPECT_FALSE(c->IsMoeLayer(2));
  EXPECT_TRUE(c->IsMoeLayer(3));
  EXPECT_EQ(c->MoeLayers().size(), 58u);
  // A full KV cache would hold 128 heads × (192 + 128) floats per token and layer.
  EXPECT_EQ(c->kv_shape().floats(), 576);
}

TEST(DeepseekConfigTest, DefaultsFollowDeepseeksCode) {
  // Without the routing keys: v2 softmax greedy, v3 sigmoid noaux_tc; no rope_scaling: no YaRN.
  std::string v2 = Set(kV2Lite, "scoring_func", nlohmann::json::value_t::discarded);
  v2 = Set(v2.c_str(), "topk_method", nlohmann::json::value_t::discarded);
  v2 = Set(v2.c_str(), "rope_scaling", nullptr);
  auto c = ParseModelConfig(v2);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->scoring, ScoringFunc::kSoftmax);
  EXPECT_EQ(c->topk_method, TopkMethod::kGreedy);
  EXPECT_FALSE(c->yarn.enabled);
  EXPECT_DOUBLE_EQ(c->yarn.softmax_mscale, 1.0);
  std::string v3 = Set(kV3, "scoring_func", nlohmann::json::value_t::discarded);
  v3 = Set(v3.c_str(), "topk_method", nlohmann::json::value_t::discarded);
  auto d = ParseModelConfig(v3);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->scoring, ScoringFunc::kSigmoid);
  EXPECT_EQ(d->topk_method, TopkMethod::kNoauxTc);
  // mscale without mscale_all_dim: the attention factor is get_mscale(factor, mscale).
  nlohmann::json j = nlohmann::json::parse(kV2Lite);
  j["rope_scaling"].erase("mscale_all_dim");
  auto e = ParseModelConfig(j.dump());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_NEAR(e->yarn.attention_factor, YarnMscale(40, 0.707), 1e-12);
  EXPECT_DOUBLE_EQ(e->yarn.softmax_mscale, 1.0);
}

TEST(DeepseekConfigTest, DenseLayersFromFirstKAndFrequency) {
  std::string text = Set(kV2Lite, "first_k_dense_replace", 3);
  text = Set(text.c_str(), "moe_layer_freq", 2);
  auto c = ParseModelConfig(text);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->MoeLayers(), (std::vector<int>{4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26}));
}

TEST(DeepseekConfigTest, YarnFrequenciesOfTheV2Fixture) {
  // The values ../shared/models/deepseek-v2-tiny/README.md §3.5 states (rope dim 16, factor 4,
  // original context 512): an independent computation.
  nlohmann::json j = nlohmann::json::parse(kV2Lite);
  j["qk_rope_head_dim"] = 16;
  j["rope_scaling"]["factor"] = 4;
  j["rope_scaling"]["original_max_position_embeddings"] = 512;
  j["max_position_embeddings"] = 2048;
  auto c = ParseModelConfig(j.dump());
  ASSERT_TRUE(c.ok()) << c.status();
  const std::vector<float> expected = {1,       0.25693506f,    0.0625f,  0.013834965f,
                                       0.0025f, 0.00079056947f, 0.00025f, 7.9056947e-05f};
  const std::vector<float> got = forward::MlaRopeInvFreq(*c);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i] / expected[i], 1.0, 1e-6) << i;
  EXPECT_NEAR(c->yarn.softmax_mscale, 1.205628, 1e-6);
}

struct Bad {
  std::string name, text, error;
};
class DeepseekBadConfigTest : public ::testing::TestWithParam<Bad> {};

TEST_P(DeepseekBadConfigTest, IsAClearError) {
  auto c = ParseModelConfig(GetParam().text);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(GetParam().error));
}

// DeepSeek-V3's published quantization_config with one field changed.
nlohmann::json Fp8Config(const std::string& key, const nlohmann::json& value) {
  nlohmann::json q = {{"activation_scheme", "dynamic"},
                      {"fmt", "e4m3"},
                      {"quant_method", "fp8"},
                      {"weight_block_size", {128, 128}}};
  q[key] = value;
  return q;
}

TEST(DeepseekConfigTest, BlockScaledFp8IsAccepted) {
  auto c = ParseModelConfig(Set(kV3, "quantization_config", Fp8Config("fmt", "e4m3")));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->fp8.enabled());
  EXPECT_EQ(c->fp8.block_rows, 128);
  EXPECT_EQ(c->fp8.block_cols, 128);
  EXPECT_FALSE(ParseModelConfig(kV3)->fp8.enabled());
  // Qwen3's FP8 releases list the modules left in BF16; the loader reads each tensor's dtype.
  auto q = ParseModelConfig(Set(kV3, "quantization_config",
                                Fp8Config("modules_to_not_convert", nlohmann::json::array({"lm_head", "mlp.gate"}))));
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->fp8.block_cols, 128);
}

nlohmann::json RopeScaling(const std::string& key, const nlohmann::json& value) {
  nlohmann::json rs = nlohmann::json::parse(kV2Lite)["rope_scaling"];
  rs[key] = value;
  return rs;
}

INSTANTIATE_TEST_SUITE_P(
    Errors, DeepseekBadConfigTest,
    ::testing::Values(
        Bad{"fp8_per_tensor", Set(kV3, "quantization_config", {{"quant_method", "fp8"}}),
            "quantization_config: weight_block_size: missing: per-tensor FP8 is not supported"},
        Bad{"awq", Set(kV3, "quantization_config", {{"quant_method", "awq"}}),
            "quantization_config: quant_method: 'awq' is not supported"},
        Bad{"static", Set(kV3, "quantization_config", Fp8Config("activation_scheme", "static")),
            "quantization_config: activation_scheme: 'static' is not supported"},
        Bad{"fmt", Set(kV3, "quantization_config", Fp8Config("fmt", "e5m2")),
            "quantization_config: fmt: 'e5m2' is not supported"},
        Bad{"block", Set(kV3, "quantization_config", Fp8Config("weight_block_size", nlohmann::json::array({128}))),
            "quantization_config: weight_block_size: expected two positive integers"},
        Bad{"block_zero", Set(kV3, "quantization_config", Fp8Config("weight_block_size", nlohmann::json::array({0, 128}))),
            "quantization_config: weight_block_size: expected two positive integers"},
        Bad{"unknown", Set(kV3, "quantization_config", Fp8Config("kv_cache_scheme", "fp8")),
            "quantization_config: kv_cache_scheme: unknown field"},
        Bad{"not_object", Set(kV3, "quantization_config", "fp8"),
            "quantization_config: expected an object"},
        Bad{"no_kv_lora", Set(kV3, "kv_lora_rank", nlohmann::json::value_t::discarded),
            "kv_lora_rank: missing"},
        Bad{"odd_rope", Set(kV3, "qk_rope_head_dim", 63), "qk_rope_head_dim: must be even"},
        Bad{"topk_method", Set(kV3, "topk_method", "auxfree"), "topk_method: 'auxfree'"},
        Bad{"scoring", Set(kV3, "scoring_func", "relu"), "scoring_func: 'relu'"},
        Bad{"groups", Set(kV3, "n_group", 7), "n_group: 7 does not divide n_routed_experts 256"},
        Bad{"topk_group", Set(kV3, "topk_group", 9), "topk_group: value 9 is outside"},
        Bad{"too_few_kept", Set(Set(kV3, "topk_group", 1).c_str(), "n_group", 64),
            "1 groups of 4 experts cannot hold num_experts_per_tok 8"},
        Bad{"noaux_singletons", Set(Set(kV3, "n_group", 256).c_str(), "topk_group", 8),
            "groups need >= 2 experts"},
        Bad{"linear_rope", Set(kV2Lite, "rope_scaling", RopeScaling("type", "linear")),
            "rope_scaling: type: 'linear' is not supported"},
        Bad{"factor", Set(kV2Lite, "rope_scaling", RopeScaling("factor", 0.5)),
            "factor: must be >= 1"},
        Bad{"no_dense_width", Set(kV2Lite, "intermediate_size", nlohmann::json::value_t::discarded),
            "layer 0 is dense but intermediate_size is not set"},
        Bad{"bias", Set(kV2Lite, "attention_bias", true), "MLA projection biases"},
        Bad{"scale", Set(kV3, "routed_scaling_factor", 0),
            "routed_scaling_factor: must be positive"}),
    [](const ::testing::TestParamInfo<Bad>& info) { return info.param.name; });

// Fuzz-style (testing/config_fuzz.h), inside rope_scaling and quantization_config too.
TEST(DeepseekConfigFuzzTest, CorruptedConfigsNeverCrash) {
  int rejected = 0;
  for (const char* base : {kV2Lite, kV3}) {
    rejected += testing::FuzzConfig(base, 19, 300, {"rope_scaling"});
  }
  EXPECT_GT(rejected, 400);
  const std::string fp8 = Set(kV3, "quantization_config", Fp8Config("fmt", "e4m3"));
  EXPECT_GT(testing::FuzzConfig(fp8, 23, 300, {"quantization_config"}), 150);
}

}  // namespace
}  // namespace semmoe::engine::model
