#include "engine/model/testing/tiny_model.h"

#include <cstdlib>

#include "common/file.h"
#include "engine/text/config.h"
#include "gtest/gtest.h"
#include "kernels/safetensors.h"

namespace semmoe::testing {
namespace {

std::string Dir(const std::string& name) { return JoinPath(std::getenv("TEST_TMPDIR"), name); }

TEST(TinyModelTest, SameSeedSameBytesOtherSeedOtherBytes) {
  TinyModelOptions o;
  o.seed = 5;
  ASSERT_TRUE(WriteTinyModel(o, Dir("a")).ok());
  ASSERT_TRUE(WriteTinyModel(o, Dir("b")).ok());
  o.seed = 6;
  ASSERT_TRUE(WriteTinyModel(o, Dir("c")).ok());
  auto a = ReadFile(Dir("a/model.safetensors")), b = ReadFile(Dir("b/model.safetensors")),
       c = ReadFile(Dir("c/model.safetensors"));
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
  EXPECT_EQ(*ReadFile(Dir("a/tokenizer.json")), *ReadFile(Dir("c/tokenizer.json")));
}

TEST(TinyModelTest, WritesAValidConfigAndShards) {
  TinyModelOptions o;
  o.arch = engine::model::Arch::kMixtral;
  o.num_shards = 2;
  ASSERT_TRUE(WriteTinyModel(o, Dir("mixtral")).ok());
  auto config = engine::model::LoadModelConfig(Dir("mixtral"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->arch, engine::model::Arch::kMixtral);
  EXPECT_EQ(config->num_experts, 8);
  auto ckpt = kernels::Checkpoint::Open(Dir("mixtral"));
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_TRUE((*ckpt)->Info("model.layers.1.block_sparse_moe.experts.7.w2.weight").ok());
}

TEST(TinyModelTest, RejectsInconsistentSizes) {
  TinyModelOptions o;
  o.vocab_size = 300;  // < 256 + 64 merges + 3.
  EXPECT_FALSE(WriteTinyModel(o, Dir("bad1")).ok());
  o = TinyModelOptions();
  o.arch = engine::model::Arch::kMixtral;
  o.head_dim = 24;  // 24 × 4 heads ≠ 64.
  EXPECT_FALSE(WriteTinyModel(o, Dir("bad2")).ok());
  o = TinyModelOptions();
  o.top_k = 9;  // > 8 experts: the config check refuses it.
  EXPECT_FALSE(WriteTinyModel(o, Dir("bad3")).ok());
}

}  // namespace
}  // namespace semmoe::testing
