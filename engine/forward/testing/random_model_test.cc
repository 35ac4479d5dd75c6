#include "engine/forward/testing/random_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace semmoe::engine::forward::testing {
namespace {

// Every routed expert weight of a model, in one list.
std::vector<float> ExpertWeights(const model::ModelWeights& w) {
  std::vector<float> all;
  for (const model::LayerWeights& layer : w.layers) {
    for (const model::MlpWeights& e : layer.experts) {
      for (const model::Matrix* m : {&e.gate.w, &e.up.w, &e.down.w}) {
        all.insert(all.end(), m->data(), m->data() + m->size());
      }
    }
  }
  return all;
}

TEST(RandomModelTest, Qwen3A3bConfigIsTheProductionShape) {
  const absl::StatusOr<model::ModelConfig> c = Qwen3A3bConfig(2);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, model::Arch::kQwen3Moe);
  EXPECT_EQ(c->num_layers, 2);
  EXPECT_EQ(c->vocab_size, 151936);
  EXPECT_EQ(c->hidden_size, 2048);
  EXPECT_EQ(c->num_heads, 32);
  EXPECT_EQ(c->num_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->num_experts, 128);
  EXPECT_EQ(c->top_k, 8);
  EXPECT_EQ(c->moe_intermediate_size, 768);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_TRUE(c->norm_topk_prob);
  EXPECT_EQ(c->MoeLayers(), (std::vector<int>{0, 1}));
  EXPECT_FALSE(Qwen3A3bConfig(0).ok());  // A model has layers.
}

TEST(RandomModelTest, FastUniformFillHasTheAskedDeviationAndIsSeeded) {
  model::ModelConfig c = RandomModelConfig(model::Arch::kQwen3Moe);
  c.num_experts = 16;
  c.moe_intermediate_size = 256;
  const RandomFill fill{.fast_uniform = true, .stddev = 0.02f};
  const std::vector<float> w = ExpertWeights(RandomWeights(c, 7, fill));
  ASSERT_GT(w.size(), 1000000u);
  double sum = 0, sq = 0;
  float largest = 0;
  for (float v : w) {
    sum += v;
    sq += double{v} * v;
    largest = std::max(largest, std::abs(v));
  }
  const double mean = sum / w.size(), stddev = std::sqrt(sq / w.size() - mean * mean);
  EXPECT_LT(std::abs(mean), 1e-4);
  EXPECT_NEAR(stddev, 0.02, 0.0004);
  EXPECT_LE(largest, 0.02f * std::sqrt(3.0f) * 1.0001f);  // Uniform on ±√3·σ.
  EXPECT_GT(largest, 0.02f * std::sqrt(3.0f) * 0.99f);

  EXPECT_EQ(ExpertWeights(RandomWeights(c, 7, fill)), w);
  EXPECT_NE(ExpertWeights(RandomWeights(c, 8, fill)), w);
  // The tests' default (normal) fill is another stream.
  EXPECT_NE(ExpertWeights(RandomWeights(c, 7)), w);
}

}  // namespace
}  // namespace semmoe::engine::forward::testing
