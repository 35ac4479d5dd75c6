// The forward's orchestration (ForwardRunner) on the CPU references of its kernels (CpuOps), for
// each architecture's features: batches, chunks, pages and decode steps against each sequence
// alone (testing/forward_check.h), bf16's two expert paths, padded decode steps. The kernels
// themselves are checked against the same references on the GPU (kernels/cuda/*_test), and
// GpuTransformer against the same scenario there.
#include "engine/forward/forward_runner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "engine/forward/bf16_view.h"
#include "engine/forward/cpu_ops.h"
#include "engine/forward/model_view.h"
#include "engine/forward/testing/forward_check.h"
#include "engine/forward/testing/random_model.h"
#include "engine/model/forward_io.h"
#include "engine/runtime/kv_cache.h"
#include "gtest/gtest.h"

namespace semmoe::engine::forward {
namespace {

using model::Arch;
using model::LogitsMode;

class ForwardRunnerTest : public ::testing::TestWithParam<Arch> {
 protected:
  void SetUp() override {
    config_ = testing::RandomModelConfig(GetParam());
    weights_ = testing::RandomWeights(config_, static_cast<uint64_t>(GetParam()) + 21);
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
  std::unique_ptr<runtime::PagedKvCache> cache_;
  CpuOps ops_;
  std::unique_ptr<ForwardRunner<CpuOps>> runner_;
};

TEST_P(ForwardRunnerTest, MatchesEachSequenceAlone) {
  testing::ExpectSameAsCpu(
      [&](absl::Span<const model::SequenceInput> batch, const model::ForwardOptions& options) {
        return runner_->Forward(batch, options);
      },
      config_, weights_, *cache_);
  EXPECT_EQ(runner_->kv_bytes(),
            int64_t{config_.num_layers} * kPages * 4 * config_.kv_shape().floats() * 4);
}

TEST_P(ForwardRunnerTest, EmptyBatchAndErrors) {
  auto empty = runner_->Forward({}, {});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->logits.rows(), 0);
  const std::vector<int32_t> tokens = {1, 2, 3};
  model::UnpagedKvSequence dense(8);
  auto unpaged = runner_->Forward({{tokens, 0, &dense, LogitsMode::kLast}}, {});
  EXPECT_EQ(unpaged.status().code(), absl::StatusCode::kInvalidArgument);
  auto seq = cache_->NewSequence();
  ASSERT_TRUE(cache_->Reserve(*seq, 8).ok());
  const std::vector<int32_t> bad = {1, config_.vocab_size};
  auto oov = runner_->Forward({{bad, 0, seq.get(), LogitsMode::kLast}}, {});
  EXPECT_NE(oov.status().message().find("outside the vocabulary"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(All, ForwardRunnerTest,
                         ::testing::Values(Arch::kQwen3Moe, Arch::kQwen2Moe, Arch::kMixtral,
                                           Arch::kDeepseekV2, Arch::kDeepseekV3),
                         [](const ::testing::TestParamInfo<Arch>& info) {
                           return std::string(model::ArchName(info.param));
                         });

// One prefill pass of three ragged sequences (every position's logits, routing collected) through
// `forward`, each on a fresh paged cache of its own.
absl::StatusOr<model::ForwardOutput> Prefill(
    const model::ModelConfig& c,
    const std::function<absl::StatusOr<model::ForwardOutput>(
        absl::Span<const model::SequenceInput>, const model::ForwardOptions&)>& forward) {
  auto cache = runtime::PagedKvCache::Create(
      {.num_layers = c.num_layers, .shape = c.kv_shape(), .page_size = 4, .num_pages = 64});
  if (!cache.ok()) return cache.status();
  std::mt19937 rng(3);
  std::vector<std::vector<int32_t>> tokens(3);
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
  std::vector<model::SequenceInput> batch;
  for (int s = 0; s < 3; ++s) {
    tokens[s].resize(5 + 7 * s);
    for (int32_t& t : tokens[s]) t = static_cast<int32_t>(rng() % c.vocab_size);
    seqs.push_back((*cache)->NewSequence());
    RETURN_IF_ERROR((*cache)->Reserve(*seqs.back(), tokens[s].size()));
    batch.push_back({tokens[s], 0, seqs.back().get(), LogitsMode::kAll});
  }
  return forward(batch, {.collect_routing = true});
}

double MaxAbs(const model::Matrix& m) { return m.cwiseAbs().maxCoeff(); }

// The bf16 path's two ways to run the experts — one grouped call over the stacked experts, or one
// bf16 product per expert and projection — round at the same points, so they agree up to f32
// summation order; and both stay near the f32 forward.
TEST_P(ForwardRunnerTest, Bf16StackedExpertsMatchPerExpertProducts) {
  auto bf16 = HostBf16Weights::Make(weights_);
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  ModelView per_expert = (*bf16)->view();
  for (LayerView& l : per_expert.layers) l.stacked = StackedExpertsView();
  CpuOps ops_a, ops_b;
  ForwardRunner<CpuOps> stacked(config_, (*bf16)->view(), KvArenaOptions{64, 4, true}, ops_a);
  ForwardRunner<CpuOps> unstacked(config_, per_expert, KvArenaOptions{64, 4, true}, ops_b);
  ASSERT_TRUE(stacked.Init().ok());
  ASSERT_TRUE(unstacked.Init().ok());
  EXPECT_EQ(stacked.kv_bytes(), runner_->kv_bytes() / 2);  // A bf16 cache.
  auto run = [](ForwardRunner<CpuOps>& r) {
    return [&r](absl::Span<const model::SequenceInput> b, const model::ForwardOptions& o) {
      return r.Forward(b, o);
    };
  };
  auto a = Prefill(config_, run(stacked));
  auto b = Prefill(config_, run(unstacked));
  auto f32 = Prefill(config_, run(*runner_));
  ASSERT_TRUE(a.ok() && b.ok() && f32.ok()) << a.status() << b.status() << f32.status();
  ASSERT_EQ(a->logits.rows(), 36);
  EXPECT_FALSE(a->logits.hasNaN());
  const double scale = MaxAbs(f32->logits);
  EXPECT_LE(MaxAbs(a->logits - b->logits), 1e-3 * scale);
  ASSERT_EQ(a->routing.size(), b->routing.size());
  for (size_t l = 0; l < a->routing.size(); ++l) {
    EXPECT_EQ(a->routing[l].expert_ids, b->routing[l].expert_ids) << "MoE layer " << l;
  }
  // bf16 against f32: inputs and weights carry 8 significant bits. On these random models the
  // routers' near-ties flip a few tokens' experts, so the largest difference is not small; the
  // relative Frobenius error is (a misplaced stride or a transposed weight would make it ~1).
  // DeepSeek-V3's sigmoid scores with a correction bias crowd the choices (more near-ties) and
  // its 2.5× scale amplifies a flip: with no flip its gap is about 0.01, with 4 of 144 flipped
  // 0.11, so a flip earns a looser bound.
  const double gap = (a->logits - f32->logits).norm() / f32->logits.norm();
  int64_t flipped = 0, total = 0;
  for (size_t l = 0; l < a->routing.size(); ++l) {
    for (size_t i = 0; i < a->routing[l].expert_ids.size(); ++i, ++total) {
      flipped += a->routing[l].expert_ids[i] != f32->routing[l].expert_ids[i];
    }
  }
  EXPECT_GT(gap, 0.0);  // It is the bf16 path.
  EXPECT_LE(gap, flipped == 0 ? 0.05 : 0.15)
      << "max |difference| " << MaxAbs(a->logits - f32->logits) << " of " << scale << "; "
      << flipped << " of " << total << " expert choices flipped";
}

// Decode graphs pad a pure decode step to a power-of-two bucket (CUDA replays it; the emulation
// runs the padded step eagerly): the real rows are what the unpadded bf16 pass gives, steps
// over the largest bucket and prefill chunks run unpadded, and the padding's KV writes land on a
// scratch page no sequence owns.
TEST_P(ForwardRunnerTest, PaddedDecodeStepsKeepTheRealRows) {
  auto bf16 = HostBf16Weights::Make(weights_);
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  CpuOps ops_a, ops_b;
  ForwardRunner<CpuOps> padded(config_, (*bf16)->view(), KvArenaOptions{kPages, 4, true}, ops_a);
  ForwardRunner<CpuOps> plain(config_, (*bf16)->view(), KvArenaOptions{kPages, 4, true}, ops_b);
  padded.EnableDecodeGraphs(8);
  ASSERT_TRUE(padded.Init().ok());
  ASSERT_TRUE(plain.Init().ok());
  EXPECT_EQ(padded.kv_bytes(), plain.kv_bytes() / kPages * (kPages + 1));  // + the scratch page.
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
  std::vector<std::vector<int32_t>> prompts(9);
  std::vector<int> length(9);  // Positions each sequence holds.
  std::vector<model::SequenceInput> prefill;
  for (int s = 0; s < 9; ++s) {
    for (int t = 0; t < 2 + s % 3; ++t) {
      prompts[s].push_back((7 * s + 3 * t + 1) % config_.vocab_size);
    }
    seqs.push_back(cache_->NewSequence());
    ASSERT_TRUE(cache_->Reserve(*seqs.back(), 12).ok());
    prefill.push_back({prompts[s], 0, seqs[s].get()});
    length[s] = static_cast<int>(prompts[s].size());
  }
  auto run = [&](absl::Span<const model::SequenceInput> batch) {
    auto a = padded.Forward(batch, {});
    auto b = plain.Forward(batch, {});
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    ASSERT_EQ(a->logits.rows(), b->logits.rows());
    const double scale = b->logits.cwiseAbs().maxCoeff();
    EXPECT_LE((a->logits - b->logits).cwiseAbs().maxCoeff(), 1e-5 * scale) << batch.size();
  };
  run(prefill);  // Not a decode step: unpadded.
  EXPECT_EQ(padded.decode_graphs().eager(), 0);
  for (int batch_size : {3, 5, 1, 9}) {  // Buckets 4, 8, 1; 9 is over the largest (8).
    std::vector<int32_t> next(batch_size);
    std::vector<model::SequenceInput> batch;
    for (int s = 0; s < batch_size; ++s) {
      next[s] = (11 * s + batch_size) % config_.vocab_size;
      batch.push_back({absl::MakeConstSpan(&next[s], 1), length[s]++, seqs[s].get()});
    }
    run(batch);
  }
  const int64_t padded_steps = 3;
  EXPECT_EQ(padded.decode_graphs().eager(), padded_steps);  // Every padded step, emulated.
}

TEST(ForwardRunnerInitTest, AnEmptyArenaIsAnError) {
  const model::ModelConfig c = testing::RandomModelConfig(Arch::kMixtral);
  const model::ModelWeights w = testing::RandomWeights(c, 1);
  CpuOps ops;
  ForwardRunner<CpuOps> runner(c, HostView(w), {.num_pages = 0}, ops);
  EXPECT_EQ(runner.Init().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace semmoe::engine::forward
