// The GPU forward's Attention-TP pass (engine/gpu: ForwardRunner + TpExchange + EpExchange) in
// CI, with the planner's affinity tables (hence here, beside the CPU's parallel_forward_test): G
// ranks, each its own thread with the CPU emulation of the device operations (CpuOps), its slice of
// the heads (engine/parallel/tp_weights.h), only its own experts, and a Gloo group standing in for
// NCCL. Every rank runs the same batches — a ragged prefill, then decode steps — through the
// shuffled reduce-scatter and all-gather, plain or with the planner's T tables (and A tables,
// whose history rides the all-gather), and every rank's logits must be the single device's (the
// product's CPU forward). Every layer's chunk plan, predicted on the "device" (device_prediction.h), must
// be the host's rule (DevicePredictor::Score, PlanShuffle) fed the single device's routing.
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
#include "engine/parallel/dispatch_plan.h"
#include "engine/parallel/gloo_communicator.h"
#include "engine/parallel/tp_weights.h"
#include "engine/runtime/kv_cache.h"
#include "gloo/rendezvous/hash_store.h"
#include "gtest/gtest.h"
#include "planner/affinity/layer_affinity.h"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/placement/placement.h"
#include "planner/trace/trace_set.h"
#include "tests/testing/emulated_passes.h"
#include "tests/testing/reference_trace.h"

namespace semmoe::engine::forward {
namespace {

using testing::GpuLikeCpuOps;

using model::Arch;
using model::LogitsMode;
using model::SequenceInput;

enum class Prediction { kPlain, kTokens, kTokensAndLayers };

struct Case {
  Arch arch;
  int ranks;
  Prediction prediction;
};

std::string Name(const ::testing::TestParamInfo<Case>& info) {
  const char* prediction[] = {"plain", "T", "T_and_A"};
  return absl::StrCat(model::ArchName(info.param.arch), "_", info.param.ranks, "_",
                      prediction[static_cast<int>(info.param.prediction)]);
}

std::vector<std::vector<int32_t>> Prompts(int vocab) {
  std::vector<std::vector<int32_t>> prompts(3);
  for (int s = 0; s < 3; ++s) {
    for (int t = 0; t < 4 + 6 * s; ++t) prompts[s].push_back((17 * t + 31 * s + 5) % vocab);
  }
  return prompts;
}

// Each layer's chunk plan for `batch` by the host's rule, with the history of `routing` (the
// single device's, per MoE layer): what every rank must have used.
std::vector<ShufflePlan> ExpectedPlans(const model::ModelConfig& c,
                                       const planner::Placement& placement,
                                       const DevicePredictor* predictor,
                                       absl::Span<const SequenceInput> batch,
                                       const std::vector<model::Routing>& routing, int g) {
  std::vector<int32_t> ids, prev;
  for (const SequenceInput& s : batch) {
    for (size_t t = 0; t < s.tokens.size(); ++t) {
      ids.push_back(s.tokens[t]);
      prev.push_back(t == 0 ? s.prev_token : s.tokens[t - 1]);
    }
  }
  const int64_t tokens = static_cast<int64_t>(ids.size());
  std::vector<int32_t> p1(tokens, -1), p2(tokens, -1);
  std::vector<ShufflePlan> plans;
  int moe = 0;
  for (int layer = 0; layer < c.num_layers; ++layer) {
    if (predictor == nullptr || !c.IsMoeLayer(layer)) {
      plans.push_back(PlainShuffle(tokens, g));
      moe += c.IsMoeLayer(layer);
      continue;
    }
    std::vector<float> scores(tokens * g);
    predictor->Score(moe, ids, prev, p2, p1, absl::MakeSpan(scores));
    plans.push_back(PlanShuffle(scores, g, 0.05));
    const DispatchPlan dispatch =
        PlanDispatch(placement, moe, 0, c.top_k, routing[moe].expert_ids, routing[moe].weights);
    p2 = p1;
    p1 = dispatch.home_device;
    ++moe;
  }
  return plans;
}

class TpForwardRunnerTest : public ::testing::TestWithParam<Case> {};

TEST_P(TpForwardRunnerTest, EveryRankMatchesTheSingleDevice) {
  const Case& param = GetParam();
  const int g = param.ranks;
  const model::ModelConfig c = testing::RandomModelConfig(param.arch);
  const uint64_t seed = 41;
  const model::ModelWeights weights = testing::RandomWeights(c, seed);
  // The one device: the product's CPU forward, its arena the shape of NewPagedSequences' cache.
  auto reference = CpuForward::Create(c, weights, {.num_pages = 48, .page_size = 4});
  ASSERT_TRUE(reference.ok()) << reference.status();
  const planner::Placement placement =
      *planner::Placement::Random(c.MoeLayers(), c.num_experts, g, /*seed=*/3);
  const std::vector<std::vector<int32_t>> prompts = Prompts(c.vocab_size);
  std::unique_ptr<planner::TokenAffinity> affinity;
  std::unique_ptr<DevicePredictor> predictor;
  if (param.prediction != Prediction::kPlain) {
    const planner::trace::TraceSet trace = semmoe::testing::ReferenceTrace(c, weights, prompts);
    affinity = std::make_unique<planner::TokenAffinity>(planner::BuildTokenAffinity(trace));
    planner::TransitionTable transitions;
    if (param.prediction == Prediction::kTokensAndLayers) {
      transitions = planner::LayerAffinity::Build(trace, placement).Table();
    }
    predictor = std::make_unique<DevicePredictor>(*affinity, placement, std::move(transitions));
  }
  constexpr int kPages = 48, kPageSize = 4;
  // The batches every rank runs (PassBatch): a ragged prefill, then two decode steps; the KV
  // arena of the runners is the paged cache's shape (48 pages of 4).
  const std::vector<int32_t> next = {7, 8, 9};
  constexpr int kPasses = 3;
  std::vector<model::Matrix> want(kPasses);
  std::vector<std::vector<ShufflePlan>> want_plans(kPasses);
  {
    const semmoe::testing::PagedSequences seqs =
        semmoe::testing::NewPagedSequences(c, prompts.size(), 24);
    for (int pass = 0; pass < kPasses; ++pass) {
      const std::vector<SequenceInput> batch =
          semmoe::testing::PassBatch(pass, prompts, next, seqs);
      auto out = (*reference)->Forward(batch, {.collect_routing = true});
      ASSERT_TRUE(out.ok()) << out.status();
      want[pass] = out->logits;
      want_plans[pass] = ExpectedPlans(c, placement, predictor.get(), batch, out->routing, g);
    }
  }

  gloo::rendezvous::HashStore store;
  std::vector<std::thread> threads;
  for (int r = 0; r < g; ++r) {
    threads.emplace_back([&, r] {
      model::ModelWeights mine = testing::RandomWeights(c, seed);
      auto local = SliceForTp(c, mine, r, g);
      ASSERT_TRUE(local.ok()) << local.status();
      auto comm = GlooCommunicator::Create(store, {.rank = r, .size = g, .prefix = "tp"});
      ASSERT_TRUE(comm.ok()) << comm.status();
      GpuLikeCpuOps ops;
      ForwardRunner<GpuLikeCpuOps> runner(
          *local, testing::RankView(HostView(mine), *local, placement, r), {kPages, kPageSize}, ops,
          {.placement = &placement,
           .comm = comm->get(),
           .attention_tp = true,
           .predictor = predictor.get(),
           .token_balance_eps = 0.05});
      ASSERT_TRUE(runner.Init().ok());
      const semmoe::testing::PagedSequences seqs =
          semmoe::testing::NewPagedSequences(*local, prompts.size(), 24);
      for (int pass = 0; pass < kPasses; ++pass) {
        auto got = runner.Forward(semmoe::testing::PassBatch(pass, prompts, next, seqs), {});
        const std::string what = absl::StrCat("rank ", r, " pass ", pass);
        ASSERT_TRUE(got.ok()) << what << ": " << got.status();
        ASSERT_EQ(got->logits.rows(), want[pass].rows()) << what;
        const float scale = want[pass].cwiseAbs().maxCoeff();
        EXPECT_LE((got->logits - want[pass]).cwiseAbs().maxCoeff(), 1e-4f * scale) << what;
        const std::vector<ShufflePlan>& plans = runner.tp_plans();
        ASSERT_EQ(plans.size(), want_plans[pass].size()) << what;
        for (size_t layer = 0; layer < plans.size(); ++layer) {
          EXPECT_EQ(plans[layer].order, want_plans[pass][layer].order)
              << what << " layer " << layer;
          EXPECT_EQ(plans[layer].counts, want_plans[pass][layer].counts)
              << what << " layer " << layer;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

INSTANTIATE_TEST_SUITE_P(All, TpForwardRunnerTest,
                         ::testing::Values(Case{Arch::kQwen3Moe, 2, Prediction::kPlain},
                                           Case{Arch::kQwen3Moe, 4, Prediction::kTokens},
                                           Case{Arch::kQwen2Moe, 2, Prediction::kTokens},
                                           Case{Arch::kMixtral, 4, Prediction::kTokensAndLayers},
                                           Case{Arch::kMixtral, 2, Prediction::kPlain},
                                           Case{Arch::kDeepseekV3, 2, Prediction::kPlain},
                                           Case{Arch::kDeepseekV3, 4, Prediction::kTokensAndLayers},
                                           Case{Arch::kDeepseekV2, 2, Prediction::kTokens}),
                         Name);

TEST(TpForwardRunnerInitTest, AttentionTpWithoutAGroupIsAnError) {
  const model::ModelConfig c = testing::RandomModelConfig(Arch::kMixtral);
  const model::ModelWeights w = testing::RandomWeights(c, 1);
  GpuLikeCpuOps ops;
  ForwardRunner<GpuLikeCpuOps> runner(c, HostView(w), {8, 4}, ops, {.attention_tp = true});
  const absl::Status s = runner.Init();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Attention-TP needs expert parallelism"), std::string::npos) << s;
}

}  // namespace
}  // namespace semmoe::engine::forward
