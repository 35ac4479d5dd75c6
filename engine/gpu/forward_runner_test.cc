// The GPU forward's orchestration (ForwardRunner) run on the CPU references of its kernels
// (CpuOps) against the CPU Transformer, for each architecture's features: what CI can check of
// the GPU path without a GPU. The kernels themselves are checked against the same references on
// the GPU (kernels/cuda/*_test), and GpuTransformer against the Transformer there.
#include "engine/gpu/forward_runner.h"

#include <memory>
#include <string>
#include <vector>

#include "engine/gpu/model_view.h"
#include "engine/gpu/testing/cpu_ops.h"
#include "engine/gpu/testing/forward_check.h"
#include "engine/gpu/testing/random_model.h"
#include "engine/model/transformer.h"
#include "engine/runtime/kv_cache.h"
#include "gtest/gtest.h"

namespace semmoe::engine::gpu {
namespace {

using model::Arch;
using model::LogitsMode;
using testing::CpuOps;

class ForwardRunnerTest : public ::testing::TestWithParam<Arch> {
 protected:
  void SetUp() override {
    config_ = testing::RandomModelConfig(GetParam());
    weights_ = testing::RandomWeights(config_, static_cast<uint64_t>(GetParam()) + 21);
    auto cpu = model::Transformer::Create(config_, weights_);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    cpu_ = std::move(*cpu);
    auto cache = runtime::PagedKvCache::Create({.num_layers = config_.num_layers,
                                                .shape = config_.kv_shape(),
                                                .page_size = 4,
                                                .num_pages = kPages});
    ASSERT_TRUE(cache.ok());
    cache_ = std::move(*cache);
    runner_ = std::make_unique<ForwardRunner<CpuOps>>(config_, HostView(weights_),
                                                      KvArenaOptions{kPages, 4}, ops_);
    ASSERT_TRUE(runner_->Init().ok());
  }
  static constexpr int kPages = 64;
  model::ModelConfig config_;
  model::ModelWeights weights_;
  std::unique_ptr<model::Transformer> cpu_;
  std::unique_ptr<runtime::PagedKvCache> cache_;
  CpuOps ops_;
  std::unique_ptr<ForwardRunner<CpuOps>> runner_;
};

TEST_P(ForwardRunnerTest, MatchesTheCpuTransformer) {
  testing::ExpectSameAsCpu(
      [&](absl::Span<const model::SequenceInput> batch, const model::ForwardOptions& options) {
        return runner_->Forward(batch, options);
      },
      *cpu_, *cache_);
  EXPECT_EQ(runner_->kv_bytes(), 2 * config_.num_layers * kPages * 4 * config_.kv_size() * 4);
}

TEST_P(ForwardRunnerTest, EmptyBatchAndErrors) {
  auto empty = runner_->Forward({}, {});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->logits.rows(), 0);
  const std::vector<int32_t> tokens = {1, 2, 3};
  model::DenseKvSequence dense(config_.num_layers, config_.kv_shape(), 8);
  auto unpaged = runner_->Forward({{tokens, 0, &dense, LogitsMode::kLast}}, {});
  EXPECT_EQ(unpaged.status().code(), absl::StatusCode::kInvalidArgument);
  auto seq = cache_->NewSequence();
  ASSERT_TRUE(cache_->Reserve(*seq, 8).ok());
  const std::vector<int32_t> bad = {1, config_.vocab_size};
  auto oov = runner_->Forward({{bad, 0, seq.get(), LogitsMode::kLast}}, {});
  EXPECT_NE(oov.status().message().find("outside the vocabulary"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(All, ForwardRunnerTest,
                         ::testing::Values(Arch::kQwen3Moe, Arch::kQwen2Moe, Arch::kMixtral),
                         [](const ::testing::TestParamInfo<Arch>& info) {
                           return std::string(model::ArchName(info.param));
                         });

TEST(ForwardRunnerInitTest, AnEmptyArenaIsAnError) {
  const model::ModelConfig c = testing::RandomModelConfig(Arch::kMixtral);
  const model::ModelWeights w = testing::RandomWeights(c, 1);
  CpuOps ops;
  ForwardRunner<CpuOps> runner(c, HostView(w), {.num_pages = 0}, ops);
  EXPECT_EQ(runner.Init().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace semmoe::engine::gpu
