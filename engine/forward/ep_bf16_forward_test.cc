// The bf16 expert-parallel pass in CI: each rank stacks only its own experts (AttachBf16 names
// them) and runs them as one grouped call (EpExchange::StackedExperts), its own rows queued before
// the dispatch and the shared expert before the combine. Every rank's logits and routing must be
// those of the one-device bf16 pass (every expert stacked) — the grouped kernel computes each
// row alone, so only the combine's summation order differs — over G ranks in threads with the
// CPU emulation (CpuOps) and a Gloo group standing in for NCCL.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/forward/bf16_view.h"
#include "engine/forward/cpu_ops.h"
#include "engine/forward/forward_runner.h"
#include "engine/forward/testing/gpu_like_ops.h"
#include "engine/forward/testing/random_model.h"
#include "engine/forward/testing/rank_view.h"
#include "engine/parallel/gloo_communicator.h"
#include "engine/runtime/kv_cache.h"
#include "gloo/rendezvous/hash_store.h"
#include "gtest/gtest.h"
#include "planner/placement/placement.h"

namespace semmoe::engine::forward {
namespace {

using testing::GpuLikeCpuOps;

using model::Arch;
using model::LogitsMode;
using model::SequenceInput;

struct Case {
  Arch arch;
  int ranks;
};

class EpBf16Test : public ::testing::TestWithParam<Case> {};

// Rank `r`'s passes: a ragged prefill of its two prompts, then two decode steps.
template <typename Ops>
std::vector<model::ForwardOutput> RunPasses(ForwardRunner<Ops>& runner, const model::ModelConfig& c,
                                            int r) {
  constexpr int kPages = 32, kPageSize = 4;
  auto cache = runtime::PagedKvCache::Create({.num_layers = c.num_layers,
                                              .shape = c.kv_shape(),
                                              .page_size = kPageSize,
                                              .num_pages = kPages});
  EXPECT_TRUE(cache.ok());
  std::vector<std::vector<int32_t>> prompts(2);
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
  for (int s = 0; s < 2; ++s) {
    for (int t = 0; t < 4 + 3 * s + r; ++t) {
      prompts[s].push_back((11 * t + 23 * s + 37 * r + 1) % c.vocab_size);
    }
    seqs.push_back((*cache)->NewSequence());
    EXPECT_TRUE((*cache)->Reserve(*seqs.back(), 24).ok());
  }
  const std::vector<int32_t> next = {3, 4};
  std::vector<model::ForwardOutput> outs;
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<SequenceInput> batch;
    for (int s = 0; s < 2; ++s) {
      if (pass == 0) {
        batch.push_back({prompts[s], 0, seqs[s].get(), LogitsMode::kAll});
      } else {
        batch.push_back({absl::MakeConstSpan(&next[s], 1),
                         static_cast<int>(prompts[s].size()) + pass - 1, seqs[s].get()});
      }
    }
    auto out = runner.Forward(batch, {.collect_routing = true});
    EXPECT_TRUE(out.ok()) << "rank " << r << " pass " << pass << ": " << out.status();
    if (!out.ok()) return outs;
    outs.push_back(std::move(*out));
  }
  return outs;
}

TEST_P(EpBf16Test, EveryRankMatchesTheOneDeviceBf16Pass) {
  const int g = GetParam().ranks;
  const model::ModelConfig c = testing::RandomModelConfig(GetParam().arch);
  const model::ModelWeights weights = testing::RandomWeights(c, 17);
  const planner::Placement placement =
      *planner::Placement::Random(c.MoeLayers(), c.num_experts, g, /*seed=*/5);
  const ModelView full = HostView(weights);
  auto one = HostBf16Weights::Make(weights);
  ASSERT_TRUE(one.ok()) << one.status();

  gloo::rendezvous::HashStore store;
  std::vector<std::thread> threads;
  for (int r = 0; r < g; ++r) {
    threads.emplace_back([&, r] {
      // The one-device pass over the same batches, for this rank's reference.
      CpuOps ref_ops;
      ForwardRunner<CpuOps> reference(c, (*one)->view(), {32, 4, true}, ref_ops);
      ASSERT_TRUE(reference.Init().ok());
      const std::vector<model::ForwardOutput> want = RunPasses(reference, c, r);

      auto mine = HostBf16Weights::Make(testing::RankView(full, c, placement, r));
      ASSERT_TRUE(mine.ok()) << mine.status();
      for (const LayerView& l : (*mine)->view().layers) {
        if (!l.is_moe) continue;
        EXPECT_NE(l.stacked.gate, nullptr);
        EXPECT_FALSE(l.stacked.experts.empty());  // Only its own.
      }
      auto comm = GlooCommunicator::Create(store, {.rank = r, .size = g, .prefix = "bf16"});
      ASSERT_TRUE(comm.ok()) << comm.status();
      GpuLikeCpuOps ops;
      ForwardRunner<GpuLikeCpuOps> runner(c, (*mine)->view(), {32, 4, true}, ops,
                                          {.placement = &placement, .comm = comm->get()});
      ASSERT_TRUE(runner.Init().ok());
      const std::vector<model::ForwardOutput> got = RunPasses(runner, c, r);
      ASSERT_EQ(got.size(), want.size());
      for (size_t pass = 0; pass < got.size(); ++pass) {
        const std::string what = absl::StrCat("rank ", r, " pass ", pass);
        ASSERT_EQ(got[pass].logits.rows(), want[pass].logits.rows()) << what;
        const float scale = want[pass].logits.cwiseAbs().maxCoeff();
        EXPECT_LE((got[pass].logits - want[pass].logits).cwiseAbs().maxCoeff(), 1e-5f * scale)
            << what;
        ASSERT_EQ(got[pass].routing.size(), want[pass].routing.size()) << what;
        for (size_t l = 0; l < got[pass].routing.size(); ++l) {
          EXPECT_EQ(got[pass].routing[l].expert_ids, want[pass].routing[l].expert_ids) << what;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

INSTANTIATE_TEST_SUITE_P(All, EpBf16Test,
                         ::testing::Values(Case{Arch::kQwen3Moe, 2}, Case{Arch::kQwen2Moe, 2},
                                           Case{Arch::kMixtral, 4}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return absl::StrCat(model::ArchName(info.param.arch), "_",
                                               info.param.ranks);
                         });

}  // namespace
}  // namespace semmoe::engine::forward
