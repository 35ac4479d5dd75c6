// DeepSeek on the GPU path, in CI: deepseek_v3 (MLA with q LoRA, sigmoid bias-corrected routing
// over expert groups, ungated shared experts, a dense first layer) through the GPU forward's
// orchestration (ForwardRunner) on the CPU emulation of its device operations (CpuOps), G ranks
// each its own thread with a Gloo group standing in for NCCL — under Attention-DP, plain
// Attention-TP and shuffled Attention-TP with the planner's tables. Every rank's logits must be
// the single device's (the product's CPU forward), before and after the group rolls to another placement
// between two passes (a live rollout: each rank's weights become the new placement's, the
// Attention-TP tables the new placement's), and under Attention-DP each pass's activations served
// locally must be what the placement in force says.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/forward/cpu_forward.h"
#include "engine/forward/cpu_ops.h"
#include "engine/forward/forward_runner.h"
#include "engine/forward/model_view.h"
#include "engine/forward/testing/gpu_like_ops.h"
#include "engine/forward/testing/random_model.h"
#include "engine/forward/testing/rank_view.h"
#include "engine/model/forward_io.h"
#include "engine/parallel/device_predictor.h"
#include "engine/parallel/gloo_communicator.h"
#include "engine/parallel/tp_weights.h"
#include "engine/runtime/kv_cache.h"
#include "gloo/rendezvous/hash_store.h"
#include "gtest/gtest.h"
#include "planner/affinity/layer_affinity.h"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/placement/placement.h"
#include "tests/testing/emulated_passes.h"
#include "tests/testing/reference_trace.h"

namespace semmoe::engine::forward {
namespace {

using testing::GpuLikeCpuOps;

using model::Arch;
using model::LogitsMode;
using model::SequenceInput;
using testing::RankView;

enum class Mode { kDp, kTpPlain, kTpShuffled };

struct Case {
  Mode mode;
  int ranks;
};

std::string Name(const ::testing::TestParamInfo<Case>& info) {
  const char* mode[] = {"dp", "tp_plain", "tp_shuffled"};
  return absl::StrCat(mode[static_cast<int>(info.param.mode)], "_", info.param.ranks);
}

// The first placement (random) and the one rolled out (another random one, one replica per
// device per layer).
planner::Placement First(const model::ModelConfig& c, int g) {
  return *planner::Placement::Random(c.MoeLayers(), c.num_experts, g, /*seed=*/3);
}
planner::Placement Second(const model::ModelConfig& c, int g) {
  return testing::WithOneReplicaPerDevice(
      *planner::Placement::Random(c.MoeLayers(), c.num_experts, g, /*seed=*/11));
}

class DeepseekEmulationTest : public ::testing::TestWithParam<Case> {};

TEST_P(DeepseekEmulationTest, EveryRankMatchesOneDeviceThroughARollout) {
  const Case& param = GetParam();
  const int g = param.ranks;
  const bool tp = param.mode != Mode::kDp;
  const model::ModelConfig c = testing::RandomModelConfig(Arch::kDeepseekV3);
  ASSERT_TRUE(c.mla && c.topk_method == model::TopkMethod::kNoauxTc);
  const uint64_t seed = 57;
  const model::ModelWeights weights = testing::RandomWeights(c, seed);
  // The one device: the product's CPU forward, its arena the shape of NewPagedSequences' cache.
  auto reference = CpuForward::Create(c, weights, {.num_pages = 48, .page_size = 4});
  ASSERT_TRUE(reference.ok()) << reference.status();
  const planner::Placement first = First(c, g), second = Second(c, g);
  std::vector<std::vector<int32_t>> prompts(3);
  for (int s = 0; s < 3; ++s) {
    for (int t = 0; t < 5 + 6 * s; ++t) prompts[s].push_back((19 * t + 37 * s + 2) % c.vocab_size);
  }
  // Shuffled Attention-TP: each placement's predictor from the planner's tables.
  std::unique_ptr<planner::TokenAffinity> affinity;
  std::unique_ptr<DevicePredictor> predict_first, predict_second;
  if (param.mode == Mode::kTpShuffled) {
    const planner::trace::TraceSet trace = semmoe::testing::ReferenceTrace(c, weights, prompts);
    affinity = std::make_unique<planner::TokenAffinity>(planner::BuildTokenAffinity(trace));
    predict_first = std::make_unique<DevicePredictor>(
        *affinity, first, planner::LayerAffinity::Build(trace, first).Table());
    predict_second = std::make_unique<DevicePredictor>(
        *affinity, second, planner::LayerAffinity::Build(trace, second).Table());
  }
  constexpr int kPages = 48, kPageSize = 4, kPasses = 6, kSwitchBefore = 3;
  const std::vector<int32_t> next = {7, 8, 9};
  // Every rank runs the same batches (PassBatch): a ragged prefill, then decode steps; the KV
  // arena of the runners is the paged cache's shape (48 pages of 4).
  std::vector<model::ForwardOutput> want(kPasses);
  {
    const semmoe::testing::PagedSequences seqs =
        semmoe::testing::NewPagedSequences(c, prompts.size(), 32);
    for (int pass = 0; pass < kPasses; ++pass) {
      auto out = (*reference)
                     ->Forward(semmoe::testing::PassBatch(pass, prompts, next, seqs),
                               {.collect_routing = true});
      ASSERT_TRUE(out.ok()) << out.status();
      want[pass] = std::move(*out);
    }
  }

  gloo::rendezvous::HashStore store;
  std::vector<std::thread> threads;
  for (int r = 0; r < g; ++r) {
    threads.emplace_back([&, r] {
      model::ModelWeights mine = testing::RandomWeights(c, seed);
      model::ModelConfig local = c;
      if (tp) {
        auto sliced = SliceForTp(c, mine, r, g);
        ASSERT_TRUE(sliced.ok()) << sliced.status();
        local = *sliced;
      }
      auto comm = GlooCommunicator::Create(store, {.rank = r, .size = g, .prefix = "ds"});
      ASSERT_TRUE(comm.ok()) << comm.status();
      const ModelView full = HostView(mine);
      GpuLikeCpuOps ops;
      ForwardRunner<GpuLikeCpuOps> runner(local, RankView(full, local, first, r),
                                          {kPages, kPageSize}, ops,
                                          {.placement = &first,
                                           .comm = comm->get(),
                                           .attention_tp = tp,
                                           .predictor = predict_first.get(),
                                           .token_balance_eps = 0.05});
      ASSERT_TRUE(runner.Init().ok());
      const semmoe::testing::PagedSequences seqs =
          semmoe::testing::NewPagedSequences(local, prompts.size(), 32);
      const planner::Placement* serving = &first;
      for (int pass = 0; pass < kPasses; ++pass) {
        const std::string what = absl::StrCat("rank ", r, " pass ", pass);
        if (pass == kSwitchBefore) {
          // Weights without the experts the next placement gains here: refused, nothing changed.
          if (r == 0) {
            const absl::Status refused =
                runner.SwitchPlacement(second, RankView(full, local, first, r), nullptr);
            EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
          }
          const absl::Status s = runner.SwitchPlacement(second, RankView(full, local, second, r),
                                                        predict_second.get());
          ASSERT_TRUE(s.ok()) << what << ": " << s;
          serving = &second;
        }
        auto got = runner.Forward(semmoe::testing::PassBatch(pass, prompts, next, seqs),
                                  {.collect_routing = !tp});
        ASSERT_TRUE(got.ok()) << what << ": " << got.status();
        const model::Matrix& expected = want[pass].logits;
        ASSERT_EQ(got->logits.rows(), expected.rows()) << what;
        const float scale = expected.cwiseAbs().maxCoeff();
        EXPECT_LE((got->logits - expected).cwiseAbs().maxCoeff(), 1e-4f * scale) << what;
        if (tp) continue;
        int64_t local_activations = 0, got_local = 0;
        for (size_t l = 0; l < want[pass].routing.size(); ++l) {
          EXPECT_EQ(got->routing[l].expert_ids, want[pass].routing[l].expert_ids) << what;
          for (int32_t e : want[pass].routing[l].expert_ids) {
            local_activations += serving->Serving(static_cast<int>(l), e, r) == r;
          }
        }
        for (int64_t n : got->local_activations) got_local += n;
        EXPECT_EQ(got_local, local_activations) << what;
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

INSTANTIATE_TEST_SUITE_P(DeepseekV3, DeepseekEmulationTest,
                         ::testing::Values(Case{Mode::kDp, 2}, Case{Mode::kDp, 4},
                                           Case{Mode::kTpPlain, 2}, Case{Mode::kTpShuffled, 2},
                                           Case{Mode::kTpShuffled, 4}),
                         Name);

}  // namespace
}  // namespace semmoe::engine::forward
