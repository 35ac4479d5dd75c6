// CpuForward on every architecture in the differential scenario of testing/forward_check.h
// (batches, chunks, pages and decode against each sequence alone), its attention timing, and its
// errors. Against the PyTorch references: cpu_forward_reference_test. Expert parallelism and
// Attention-TP through the same runner: ep_forward_runner_test, //tests:parallel_forward_test.
#include "engine/forward/cpu_forward.h"

#include <memory>
#include <string>
#include <vector>

#include "engine/forward/testing/forward_check.h"
#include "engine/forward/testing/random_model.h"
#include "engine/model/forward_io.h"
#include "engine/runtime/kv_cache.h"
#include "gtest/gtest.h"

namespace semmoe::engine::forward {
namespace {

using model::Arch;

class CpuForwardTest : public ::testing::TestWithParam<Arch> {};

TEST_P(CpuForwardTest, MatchesEachSequenceAloneAndTimesAttention) {
  const model::ModelConfig config = testing::RandomModelConfig(GetParam());
  const model::ModelWeights weights = testing::RandomWeights(config, 40);
  constexpr int kPages = 64;
  auto cache = runtime::PagedKvCache::Create({.num_layers = config.num_layers,
                                              .shape = config.kv_shape(),
                                              .page_size = 4,
                                              .num_pages = kPages});
  ASSERT_TRUE(cache.ok());
  auto cpu = CpuForward::Create(config, weights, {.num_pages = kPages, .page_size = 4});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  int passes = 0;
  testing::ExpectSameAsCpu(
      [&](absl::Span<const model::SequenceInput> batch, const model::ForwardOptions& options) {
        auto out = (*cpu)->Forward(batch, options);
        if (out.ok()) {
          ++passes;
          EXPECT_EQ(out->attention_seconds_per_layer.size(), config.num_layers);
          double sum = 0;
          for (double s : out->attention_seconds_per_layer) sum += s;
          EXPECT_GT(out->attention_seconds, 0);
          EXPECT_DOUBLE_EQ(out->attention_seconds, sum);
        }
        return out;
      },
      config, weights, **cache);
  EXPECT_EQ(passes, 8);
  EXPECT_EQ((*cpu)->kv_bytes(),
            int64_t{config.num_layers} * kPages * 4 * config.kv_shape().floats() * 4);
  EXPECT_TRUE((*cpu)->ep_counters().empty());
  EXPECT_EQ((*cpu)->tp_counters(), nullptr);
}

INSTANTIATE_TEST_SUITE_P(All, CpuForwardTest,
                         ::testing::Values(Arch::kQwen3Moe, Arch::kQwen2Moe, Arch::kMixtral,
                                           Arch::kDeepseekV2, Arch::kDeepseekV3),
                         [](const ::testing::TestParamInfo<Arch>& info) {
                           return std::string(model::ArchName(info.param));
                         });

TEST(CpuForwardErrorsTest, RefusesWhatItCannotServe) {
  const model::ModelConfig config = testing::RandomModelConfig(Arch::kQwen3Moe);
  const model::ModelWeights weights = testing::RandomWeights(config, 41);
  EXPECT_EQ(CpuForward::Create(config, weights, {.num_pages = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  model::ModelWeights missing = weights;
  missing.layers[config.MoeLayers()[0]].experts[1] = {};
  const auto unloaded = CpuForward::Create(config, missing, {.num_pages = 8});
  EXPECT_EQ(unloaded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(unloaded.status().message().find("expert 1"), std::string::npos);
  auto cpu = CpuForward::Create(config, weights, {.num_pages = 8, .page_size = 4});
  ASSERT_TRUE(cpu.ok());
  auto placement = planner::Placement::Vanilla(config.MoeLayers(), config.num_experts, 2);
  ASSERT_TRUE(placement.ok());
  EXPECT_EQ((*cpu)->SwitchPlacement(*placement, weights, nullptr).code(),
            absl::StatusCode::kFailedPrecondition);
  // A sequence whose pages are not in the arena.
  model::UnpagedKvSequence dense(8);
  const std::vector<int32_t> tokens = {1, 2};
  EXPECT_EQ((*cpu)->Forward({{tokens, 0, &dense, model::LogitsMode::kLast}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace semmoe::engine::forward
