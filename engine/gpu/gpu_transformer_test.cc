// The GPU forward against the CPU forward (engine/forward/cpu_forward.h, itself checked against
// float64 and PyTorch references: architectures_test, cpu_forward_reference_test) on seeded
// random models of each architecture's
// features (engine/forward/testing/random_model.h), through the differential scenario of
// engine/forward/testing/forward_check.h — ragged prefill with every logits mode, chunked prefill
// next to decode, decode across page boundaries, routing — plus the empty batch and the errors.
// Needs a GPU (tag gpu). Kept free of the tokenizer (and so of ICU) to ship small.
#include "engine/gpu/gpu_transformer.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/forward/bf16_view.h"
#include "engine/forward/cpu_ops.h"
#include "engine/forward/forward_runner.h"
#include "engine/forward/testing/forward_check.h"
#include "engine/forward/testing/random_model.h"
#include "engine/gpu/nccl_communicator.h"
#include "engine/model/forward_io.h"
#include "engine/runtime/kv_cache.h"
#include "gloo/rendezvous/hash_store.h"
#include "gtest/gtest.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/testing/error_report.h"
#include "planner/placement/placement.h"

namespace semmoe::engine::gpu {
namespace {

using model::Arch;
using model::LogitsMode;

bool HaveGpu() {
  auto n = kernels::cuda::DeviceCount();
  return n.ok() && *n > 0;
}

class GpuTransformerTest : public ::testing::TestWithParam<Arch> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(HaveGpu()) << "needs a GPU";
    config_ = forward::testing::RandomModelConfig(GetParam());
    weights_ = forward::testing::RandomWeights(config_, static_cast<uint64_t>(GetParam()) + 21);
    auto cache = runtime::PagedKvCache::Create({.num_layers = config_.num_layers,
                                                .shape = config_.kv_shape(),
                                                .page_size = kPageSize,
                                                .num_pages = kPages});
    ASSERT_TRUE(cache.ok());
    cache_ = std::move(*cache);
    auto gpu = GpuTransformer::Create(config_, weights_,
                                      {.device = 0, .num_pages = kPages, .page_size = kPageSize});
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    gpu_ = std::move(*gpu);
  }

  static constexpr int kPageSize = 4;
  static constexpr int kPages = 64;
  model::ModelConfig config_;
  model::ModelWeights weights_;
  std::unique_ptr<runtime::PagedKvCache> cache_;
  std::unique_ptr<GpuTransformer> gpu_;
};

TEST_P(GpuTransformerTest, MatchesTheCpuForwardOnEachSequenceAlone) {
  const std::string arch(model::ArchName(GetParam()));
  forward::testing::ExpectSameAsCpu(
      [&](absl::Span<const model::SequenceInput> batch, const model::ForwardOptions& options) {
        return gpu_->Forward(batch, options);
      },
      config_, weights_, *cache_,
      [&](const std::string&, const model::Matrix& got, const model::Matrix& want) {
        kernels::cuda::testing::ErrorReport::Add(absl::StrCat("gpu_forward logits ", arch),
                                                 absl::MakeConstSpan(got.data(), got.size()),
                                                 absl::MakeConstSpan(want.data(), want.size()));
      });
}

// The expert-parallel pass on the GPU: EpExchange over a one-rank NCCL group (the device machine
// has one GPU; NCCL refuses two ranks on one device). Several ranks are tested in CI with the
// CPU emulation over Gloo (ep_forward_runner_test).
TEST_P(GpuTransformerTest, ExpertParallelOnAOneRankNcclGroupMatchesTheCpu) {
  gloo::rendezvous::HashStore store;
  auto nccl = NcclCommunicator::Create(store, {.rank = 0, .size = 1, .device = 0});
  ASSERT_TRUE(nccl.ok()) << nccl.status();
  auto placement = planner::Placement::Vanilla(config_.MoeLayers(), config_.num_experts, 1);
  ASSERT_TRUE(placement.ok());
  auto ep = GpuTransformer::Create(config_, weights_,
                                   {.device = 0,
                                    .num_pages = kPages,
                                    .page_size = kPageSize,
                                    .placement = &*placement,
                                    .comm = nccl->get()});
  ASSERT_TRUE(ep.ok()) << ep.status();
  forward::testing::ExpectSameAsCpu(
      [&](absl::Span<const model::SequenceInput> batch, const model::ForwardOptions& options) {
        return (*ep)->Forward(batch, options);
      },
      config_, weights_, *cache_);
  auto idle = (*ep)->Forward({});  // An idle rank still joins the exchange.
  ASSERT_TRUE(idle.ok()) << idle.status();
  EXPECT_GT((*nccl)->counters()[CollectiveKind::kAllToAll].calls, 0);
}

// Attention-TP on the GPU (TpExchange: the shuffle packs on the device, NCCL's reduce-scatter and
// all-gather) over a one-rank group; several ranks run in CI over Gloo (gpu_tp_emulation_test).
TEST_P(GpuTransformerTest, AttentionTpOnAOneRankNcclGroupMatchesTheCpu) {
  gloo::rendezvous::HashStore store;
  auto nccl = NcclCommunicator::Create(store, {.rank = 0, .size = 1, .device = 0});
  ASSERT_TRUE(nccl.ok()) << nccl.status();
  auto placement = planner::Placement::Vanilla(config_.MoeLayers(), config_.num_experts, 1);
  ASSERT_TRUE(placement.ok());
  auto tp = GpuTransformer::Create(config_, weights_,
                                   {.device = 0,
                                    .num_pages = kPages,
                                    .page_size = kPageSize,
                                    .placement = &*placement,
                                    .comm = nccl->get(),
                                    .attention_tp = true});
  ASSERT_TRUE(tp.ok()) << tp.status();
  forward::testing::ExpectSameAsCpu(
      [&](absl::Span<const model::SequenceInput> batch, const model::ForwardOptions& options) {
        return (*tp)->Forward(batch, options);
      },
      config_, weights_, *cache_);
  EXPECT_GT((*nccl)->counters()[CollectiveKind::kReduceScatter].calls, 0);
}

// bf16 weights (tensor-core GemmEx, the grouped tensor-core experts) against the CPU emulation
// of the same operations and rounding points (ForwardRunner over CpuOps, as CI runs it): only
// f32 summation orders differ, and with them an occasional last bit of a bf16 rounding.
TEST_P(GpuTransformerTest, Bf16MatchesItsCpuEmulation) {
  auto gpu = GpuTransformer::Create(
      config_, weights_, {.device = 0, .bf16 = true, .num_pages = kPages, .page_size = kPageSize});
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_TRUE((*gpu)->bf16());
  EXPECT_LT((*gpu)->weight_bytes(), gpu_->weight_bytes());
  auto host = forward::HostBf16Weights::Make(weights_);
  ASSERT_TRUE(host.ok()) << host.status();
  forward::CpuOps ops;
  forward::ForwardRunner<forward::CpuOps> emulation(config_, (*host)->view(),
                                                    {kPages, kPageSize, true}, ops);
  ASSERT_TRUE(emulation.Init().ok());
  std::vector<std::vector<int32_t>> tokens = {{1, 5, 9, 2, 7}, {3, 3, 8}, {4, 1, 2, 6, 8, 9, 10}};
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
  std::vector<model::SequenceInput> batch;
  for (auto& t : tokens) {
    for (int32_t& id : t) id %= config_.vocab_size;
    seqs.push_back(cache_->NewSequence());
    ASSERT_TRUE(cache_->Reserve(*seqs.back(), t.size()).ok());
    batch.push_back({t, 0, seqs.back().get(), LogitsMode::kAll});
  }
  auto got = (*gpu)->Forward(batch, {.collect_routing = true});
  auto want = emulation.Forward(batch, {.collect_routing = true});
  ASSERT_TRUE(got.ok() && want.ok()) << got.status() << want.status();
  kernels::cuda::testing::ErrorReport::Add(
      absl::StrCat("gpu_forward bf16 logits vs CPU emulation ", model::ArchName(GetParam())),
      absl::MakeConstSpan(got->logits.data(), got->logits.size()),
      absl::MakeConstSpan(want->logits.data(), want->logits.size()));
  const double scale = want->logits.cwiseAbs().maxCoeff();
  EXPECT_LE((got->logits - want->logits).cwiseAbs().maxCoeff(), 1e-2 * scale);
  int64_t same = 0, total = 0;
  for (size_t l = 0; l < want->routing.size(); ++l) {
    for (size_t i = 0; i < want->routing[l].expert_ids.size(); ++i) {
      same += got->routing[l].expert_ids[i] == want->routing[l].expert_ids[i];
      ++total;
    }
  }
  EXPECT_GE(same, total * 99 / 100) << same << " of " << total;
}

// Decode steps as CUDA graphs (bf16): each bucket runs eagerly, is captured, then replayed; the
// logits stay those of the eager bf16 forward.
TEST_P(GpuTransformerTest, Bf16DecodeGraphsMatchEagerDecode) {
  auto eager = GpuTransformer::Create(
      config_, weights_, {.device = 0, .bf16 = true, .num_pages = kPages, .page_size = kPageSize});
  auto graphs = GpuTransformer::Create(
      config_, weights_,
      {.device = 0, .bf16 = true, .num_pages = kPages, .page_size = kPageSize, .decode_graphs = 8});
  ASSERT_TRUE(eager.ok() && graphs.ok()) << eager.status() << graphs.status();
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
  std::vector<std::vector<int32_t>> prompts(5);
  std::vector<model::SequenceInput> prefill;
  std::vector<int> length(5);
  for (int s = 0; s < 5; ++s) {
    prompts[s] = {1 + s, 2, 3 + s};
    seqs.push_back(cache_->NewSequence());
    ASSERT_TRUE(cache_->Reserve(*seqs.back(), 16).ok());
    prefill.push_back({prompts[s], 0, seqs[s].get()});
    length[s] = 3;
  }
  ASSERT_TRUE((*eager)->Forward(prefill).ok());
  ASSERT_TRUE((*graphs)->Forward(prefill).ok());
  for (int step = 0; step < 4; ++step) {  // Buckets 4 and 1, each four times.
    for (int batch_size : {3, 1}) {
      std::vector<int32_t> next(batch_size);
      std::vector<model::SequenceInput> batch;
      for (int s = 0; s < batch_size; ++s) {
        next[s] = (5 * s + step + 7) % config_.vocab_size;
        batch.push_back({absl::MakeConstSpan(&next[s], 1), length[s]++, seqs[s].get()});
      }
      auto a = (*graphs)->Forward(batch);
      auto b = (*eager)->Forward(batch);
      ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
      const double scale = b->logits.cwiseAbs().maxCoeff();
      EXPECT_LE((a->logits - b->logits).cwiseAbs().maxCoeff(), 1e-3 * scale)
          << "step " << step << " batch " << batch_size;
    }
  }
  EXPECT_EQ((*graphs)->graph_replays(), 2 * 3);  // Per bucket: eager, capture + replay, replay 2.
  EXPECT_EQ((*eager)->graph_replays(), 0);
}

TEST_P(GpuTransformerTest, EmptyBatchAndErrors) {
  auto empty = gpu_->Forward({});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->logits.rows(), 0);

  const std::vector<int32_t> tokens = {1, 2, 3};
  model::UnpagedKvSequence dense(8);
  auto unpaged = gpu_->Forward({{tokens, 0, &dense, LogitsMode::kLast}});
  EXPECT_EQ(unpaged.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unpaged.status().message().find("paged KV"), std::string::npos) << unpaged.status();

  auto seq = cache_->NewSequence();
  ASSERT_TRUE(cache_->Reserve(*seq, 8).ok());
  const std::vector<int32_t> bad = {1, config_.vocab_size};
  auto oov = gpu_->Forward({{bad, 0, seq.get(), LogitsMode::kLast}});
  EXPECT_EQ(oov.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(oov.status().message().find("outside the vocabulary"), std::string::npos);

  // A page outside the GPU arena (a host cache bigger than the GPU's).
  auto big = runtime::PagedKvCache::Create({.num_layers = config_.num_layers,
                                            .shape = config_.kv_shape(),
                                            .page_size = kPageSize,
                                            .num_pages = 2 * kPages});
  ASSERT_TRUE(big.ok());
  auto view = (*big)->View({2 * kPages - 1});
  ASSERT_TRUE(view.ok());
  auto outside = gpu_->Forward({{tokens, 0, view->get(), LogitsMode::kLast}});
  EXPECT_EQ(outside.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(outside.status().message().find("outside the forward's cache"), std::string::npos)
      << outside.status();
}

INSTANTIATE_TEST_SUITE_P(All, GpuTransformerTest,
                         ::testing::Values(Arch::kQwen3Moe, Arch::kQwen2Moe, Arch::kMixtral),
                         [](const ::testing::TestParamInfo<Arch>& info) {
                           return std::string(model::ArchName(info.param));
                         });

TEST(GpuTransformerCreateTest, RejectsShapesTheKernelsDoNotTake) {
  ASSERT_TRUE(HaveGpu()) << "needs a GPU";
  model::ModelConfig c = forward::testing::RandomModelConfig(Arch::kMixtral);
  c.head_dim = 1056;  // The attention kernel takes heads up to 1024 floats.
  const model::ModelWeights w = forward::testing::RandomWeights(c, 1);
  auto gpu = GpuTransformer::Create(c, w, {.num_pages = 4});
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(gpu.status().message().find("head_dim"), std::string::npos) << gpu.status();

  c = forward::testing::RandomModelConfig(Arch::kMixtral);
  model::ModelWeights partial = forward::testing::RandomWeights(c, 2);
  partial.layers[1].experts[2] = model::MlpWeights();  // Held by another EP rank.
  gpu = GpuTransformer::Create(c, partial, {.num_pages = 4});
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(gpu.status().message().find("layer 1 expert 2"), std::string::npos) << gpu.status();
}

}  // namespace
}  // namespace semmoe::engine::gpu
