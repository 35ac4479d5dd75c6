// The GPU forward's expert-parallel pass (ForwardRunner + EpExchange) in CI: G ranks, each its
// own thread with the CPU emulation of the device operations (CpuOps), only its own experts, and
// a Gloo group standing in for NCCL (both take the memory the Ops hand out). Every rank serves
// its own sequences (Attention-DP, one rank idle at first) and must give what the single device
// (the product's CPU forward) gives for them, under vanilla, random and replicated placements, and
// on 2 nodes of 2 ranks (node-level dedup: the two-stage exchange the GPU path runs over NCCL); the
// per-sequence activation counts must match the routing and the placement.
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
using testing::RankView;

// kNodes / kNodesReplicated: random / replicated on 2 nodes of 2 ranks (node-level dedup, the
// two-stage exchange of node_exchange.h).
enum class Layout { kVanilla, kRandom, kReplicated, kNodes, kNodesReplicated };

struct Case {
  Arch arch;
  Layout layout;
  int ranks;
};

std::string Name(const ::testing::TestParamInfo<Case>& info) {
  const char* layout[] = {"vanilla", "random", "replicated", "nodes", "nodes_replicated"};
  return absl::StrCat(model::ArchName(info.param.arch), "_",
                      layout[static_cast<int>(info.param.layout)], "_", info.param.ranks);
}

planner::Placement MakePlacement(const model::ModelConfig& c, Layout layout, int g) {
  if (layout == Layout::kVanilla)
    return *planner::Placement::Vanilla(c.MoeLayers(), c.num_experts, g);
  planner::Placement p = *planner::Placement::Random(c.MoeLayers(), c.num_experts, g, /*seed=*/7);
  if (layout == Layout::kRandom || layout == Layout::kNodes) return p;
  return testing::WithOneReplicaPerDevice(p);
}

class EpForwardRunnerTest : public ::testing::TestWithParam<Case> {};

TEST_P(EpForwardRunnerTest, EveryRankMatchesTheSingleDevice) {
  const Case& param = GetParam();
  const int g = param.ranks;
  const model::ModelConfig c = testing::RandomModelConfig(param.arch);
  const model::ModelWeights weights = testing::RandomWeights(c, 31);
  const planner::Placement placement = MakePlacement(c, param.layout, g);
  const bool nodes = param.layout == Layout::kNodes || param.layout == Layout::kNodesReplicated;
  const planner::Topology topology = *planner::Topology::Parse(nodes ? "2x2" : absl::StrCat("1x", g));
  const ModelView full = HostView(weights);
  const int moe_layers = static_cast<int>(c.MoeLayers().size());
  constexpr int kPages = 48, kPageSize = 4;

  gloo::rendezvous::HashStore store;
  std::vector<std::vector<MoeLayerCounters>> counters(g);
  std::vector<int64_t> want_local(g, 0), want_tokens(g, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < g; ++r) {
    threads.emplace_back([&, r] {
      auto comm = GlooCommunicator::Create(store, {.rank = r, .size = g, .prefix = "ep"});
      ASSERT_TRUE(comm.ok()) << comm.status();
      GpuLikeCpuOps ops;
      ForwardRunner<GpuLikeCpuOps> runner(c, RankView(full, c, placement, r), {kPages, kPageSize},
                                          ops,
                                          {.placement = &placement,
                                           .comm = comm->get(),
                                           .topology = nodes ? &topology : nullptr});
      ASSERT_TRUE(runner.Init().ok());
      // The single device: the CPU forward with every expert, its arena indexed by the same
      // page tables as the runner's.
      auto reference = CpuForward::Create(c, weights, {.num_pages = kPages, .page_size = kPageSize});
      ASSERT_TRUE(reference.ok()) << reference.status();
      auto cache = runtime::PagedKvCache::Create({.num_layers = c.num_layers,
                                                  .shape = c.kv_shape(),
                                                  .page_size = kPageSize,
                                                  .num_pages = kPages});
      ASSERT_TRUE(cache.ok());
      // Two sequences per rank, ragged; the last rank idles in the first pass.
      std::vector<std::vector<int32_t>> prompts(2);
      for (int s = 0; s < 2; ++s) {
        for (int t = 0; t < 3 + 5 * s + 2 * r; ++t) {
          prompts[s].push_back((13 * t + 29 * s + 41 * r + 3) % c.vocab_size);
        }
      }
      std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
      for (int s = 0; s < 2; ++s) {
        seqs.push_back((*cache)->NewSequence());
        ASSERT_TRUE((*cache)->Reserve(*seqs.back(), 40).ok());
      }
      const bool late = r == g - 1;
      std::vector<int32_t> next(2, 5);
      for (int pass = 0; pass < 5; ++pass) {
        std::vector<SequenceInput> batch;
        if (pass == 0 && !late) {
          batch = {{prompts[0], 0, seqs[0].get(), LogitsMode::kAll},
                   {prompts[1], 0, seqs[1].get(), LogitsMode::kLast}};
        } else if (pass == 1 && late) {
          batch = {{prompts[0], 0, seqs[0].get(), LogitsMode::kLast},
                   {prompts[1], 0, seqs[1].get(), LogitsMode::kAll}};
        } else if (pass >= 1) {
          const int started = late ? 2 : 1;
          if (pass >= started) {
            for (int s = 0; s < 2; ++s) {
              const int position = static_cast<int>(prompts[s].size()) + pass - started;
              batch.push_back({absl::MakeConstSpan(&next[s], 1), position, seqs[s].get()});
            }
          }
        }
        auto got = runner.Forward(batch, {.collect_routing = true});
        ASSERT_TRUE(got.ok()) << "rank " << r << " pass " << pass << ": " << got.status();
        if (batch.empty()) {
          EXPECT_EQ(got->logits.rows(), 0);
          continue;
        }
        auto want = (*reference)->Forward(batch, {.collect_routing = true});
        ASSERT_TRUE(want.ok());
        const std::string what = absl::StrCat("rank ", r, " pass ", pass);
        ASSERT_EQ(got->logits.rows(), want->logits.rows()) << what;
        const float scale = want->logits.cwiseAbs().maxCoeff();
        EXPECT_LE((got->logits - want->logits).cwiseAbs().maxCoeff(), 1e-4f * scale) << what;
        ASSERT_EQ(got->routing.size(), want->routing.size());
        int64_t local = 0, all = 0;
        for (int l = 0; l < moe_layers; ++l) {
          EXPECT_EQ(got->routing[l].expert_ids, want->routing[l].expert_ids) << what;
          for (int32_t e : want->routing[l].expert_ids) {
            ++all;
            local += placement.Serving(l, e, r) == r;
          }
        }
        ASSERT_EQ(got->activations.size(), batch.size()) << what;
        int64_t got_local = 0, got_all = 0;
        for (size_t s = 0; s < batch.size(); ++s) {
          got_local += got->local_activations[s];
          got_all += got->activations[s];
        }
        EXPECT_EQ(got_all, all) << what;
        EXPECT_EQ(got_local, local) << what;
        want_local[r] += local;
        want_tokens[r] += got->routing[0].tokens();
      }
      counters[r] = runner.ep_counters();
    });
  }
  for (std::thread& t : threads) t.join();
  if (HasFatalFailure()) return;

  // The exchange's counters: each rank's activations, and every byte sent is received.
  for (int l = 0; l < moe_layers; ++l) {
    int64_t sent = 0, received = 0, back_sent = 0, back_received = 0, cross_sent = 0,
            cross_received = 0;
    for (int r = 0; r < g; ++r) {
      const MoeLayerCounters& m = counters[r].at(l);
      EXPECT_EQ(m.tokens, want_tokens[r]) << "rank " << r;
      EXPECT_EQ(m.local_activations + m.remote_activations, m.tokens * c.top_k);
      sent += m.dispatch_bytes_sent;
      received += m.dispatch_bytes_received;
      back_sent += m.combine_bytes_sent;
      back_received += m.combine_bytes_received;
      cross_sent += m.cross_node_bytes_sent;
      cross_received += m.cross_node_bytes_received;
    }
    EXPECT_EQ(sent, received) << "MoE layer " << l;
    EXPECT_EQ(cross_sent, cross_received) << "MoE layer " << l;
    if (nodes) {
      EXPECT_GT(cross_sent, 0) << "MoE layer " << l;
    }
    EXPECT_EQ(back_sent, back_received) << "MoE layer " << l;
    if (param.layout != Layout::kVanilla || g > 1) {
      EXPECT_GT(sent, 0);
    }
  }
  for (int r = 0; r < g; ++r) {
    int64_t local = 0;
    for (const MoeLayerCounters& m : counters[r]) local += m.local_activations;
    EXPECT_EQ(local, want_local[r]) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(All, EpForwardRunnerTest,
                         ::testing::Values(Case{Arch::kQwen3Moe, Layout::kVanilla, 2},
                                           Case{Arch::kQwen3Moe, Layout::kRandom, 4},
                                           Case{Arch::kQwen2Moe, Layout::kReplicated, 2},
                                           Case{Arch::kMixtral, Layout::kRandom, 4},
                                           Case{Arch::kMixtral, Layout::kReplicated, 2},
                                           Case{Arch::kDeepseekV3, Layout::kRandom, 4},
                                           Case{Arch::kDeepseekV2, Layout::kReplicated, 2},
                                           Case{Arch::kQwen3Moe, Layout::kNodes, 4},
                                           Case{Arch::kDeepseekV3, Layout::kNodesReplicated, 4}),
                         Name);

TEST(EpForwardRunnerInitTest, APlacementForAnotherGroupOrMissingExpertsIsAnError) {
  const model::ModelConfig c = testing::RandomModelConfig(Arch::kMixtral);
  const model::ModelWeights weights = testing::RandomWeights(c, 1);
  gloo::rendezvous::HashStore store;
  auto comm = GlooCommunicator::Create(store, {.rank = 0, .size = 1, .prefix = "init"});
  ASSERT_TRUE(comm.ok());
  GpuLikeCpuOps ops;
  const planner::Placement two = MakePlacement(c, Layout::kVanilla, 2);
  ForwardRunner<GpuLikeCpuOps> wrong_group(c, HostView(weights), {8, 4}, ops,
                                           {.placement = &two, .comm = comm->get()});
  EXPECT_EQ(wrong_group.Init().code(), absl::StatusCode::kInvalidArgument);
  const planner::Placement one = MakePlacement(c, Layout::kVanilla, 1);
  ModelView missing = HostView(weights);
  missing.layers[2].experts[1] = MlpView();
  ForwardRunner<GpuLikeCpuOps> no_expert(c, missing, {8, 4}, ops,
                                         {.placement = &one, .comm = comm->get()});
  const absl::Status s = no_expert.Init();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("layer 2 expert 1"), std::string::npos) << s;
  ForwardRunner<GpuLikeCpuOps> half(c, HostView(weights), {8, 4}, ops, {.placement = &one});
  EXPECT_EQ(half.Init().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace semmoe::engine::forward
