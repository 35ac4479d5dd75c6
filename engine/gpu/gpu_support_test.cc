#include "engine/gpu/gpu_support.h"

#include <cstdlib>

#include "common/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "engine/model/testing/tiny_model.h"

namespace semmoe::engine::gpu {
namespace {

using ::testing::HasSubstr;

model::ModelConfig Config(model::Arch arch, int head_dim) {
  ::semmoe::testing::TinyModelOptions o;
  o.arch = arch;
  o.head_dim = head_dim;
  o.hidden_size = 4 * head_dim;
  const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), std::string(model::ArchName(arch)) +
                                                                   "_" + std::to_string(head_dim));
  EXPECT_TRUE(::semmoe::testing::WriteTinyModel(o, dir).ok());
  auto config = model::LoadModelConfig(dir);
  EXPECT_TRUE(config.ok()) << config.status();
  return *config;
}

TEST(GpuSupportTest, StandardAttentionIsSupported) {
  EXPECT_TRUE(CheckGpuSupport(Config(model::Arch::kQwen3Moe, 32)).ok());
  EXPECT_TRUE(CheckGpuSupport(Config(model::Arch::kMixtral, 32)).ok());
}

TEST(GpuSupportTest, DeepseekIsSupported) {
  for (model::Arch arch : {model::Arch::kDeepseekV2, model::Arch::kDeepseekV3}) {
    const absl::Status s = CheckGpuSupport(Config(arch, 32));
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(GpuSupportTest, SizesOutsideTheKernelsAreRefusedWithTheReason) {
  model::ModelConfig c = Config(model::Arch::kQwen3Moe, 32);
  c.head_dim = 2048;
  EXPECT_THAT(std::string(CheckGpuSupport(c).message()), HasSubstr("head_dim up to 1024"));
  c = Config(model::Arch::kDeepseekV3, 32);
  c.mla_dims.kv_lora_rank = 2000;
  EXPECT_THAT(std::string(CheckGpuSupport(c).message()),
              HasSubstr("kv_lora_rank + qk_rope_head_dim"));
  c = Config(model::Arch::kDeepseekV3, 32);
  c.n_group = 64;
  EXPECT_THAT(std::string(CheckGpuSupport(c).message()), HasSubstr("up to 32 groups"));
}

}  // namespace
}  // namespace semmoe::engine::gpu
