// The GPU forward's expert-parallel pass (ForwardRunner + EpExchange) in CI: G ranks, each its
// own thread with the CPU emulation of the device operations (CpuOps), only its own experts, and
// a Gloo group standing in for NCCL (both take the memory the Ops hand out), through the group
// scenario of testing/ep_group_scenario.h (every rank against the single device, then the
// exchange's counters) — under vanilla, random and replicated placements, and on 2 nodes of 2
// ranks (node-level dedup: the two-stage exchange the GPU path runs over NCCL).
// engine/gpu:gpu_ep_group_test runs the same scenario on a GPU.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/forward/cpu_ops.h"
#include "engine/forward/forward_runner.h"
#include "engine/forward/model_view.h"
#include "engine/forward/testing/ep_group_scenario.h"
#include "engine/forward/testing/gpu_like_ops.h"
#include "engine/forward/testing/random_model.h"
#include "engine/forward/testing/rank_view.h"
#include "engine/model/forward_io.h"
#include "engine/parallel/gloo_communicator.h"
#include "gloo/rendezvous/hash_store.h"
#include "gtest/gtest.h"
#include "planner/placement/placement.h"
#include "planner/placement/topology.h"

namespace semmoe::engine::forward {
namespace {

using testing::GpuLikeCpuOps;

using model::Arch;
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

  gloo::rendezvous::HashStore store;
  std::vector<std::vector<MoeLayerCounters>> counters(g);
  std::vector<testing::RankExpectation> expected(g);
  std::vector<std::thread> threads;
  for (int r = 0; r < g; ++r) {
    threads.emplace_back([&, r] {
      auto comm = GlooCommunicator::Create(store, {.rank = r, .size = g, .prefix = "ep"});
      ASSERT_TRUE(comm.ok()) << comm.status();
      GpuLikeCpuOps ops;
      ForwardRunner<GpuLikeCpuOps> runner(
          c, RankView(full, c, placement, r),
          {testing::kScenarioPages, testing::kScenarioPageSize}, ops,
          {.placement = &placement,
           .comm = comm->get(),
           .topology = nodes ? &topology : nullptr});
      ASSERT_TRUE(runner.Init().ok());
      expected[r] = testing::RunRankScenario(
          c, weights, placement, r, g,
          [&](absl::Span<const SequenceInput> batch, const model::ForwardOptions& options) {
            return runner.Forward(batch, options);
          });
      counters[r] = runner.ep_counters();
    });
  }
  for (std::thread& t : threads) t.join();
  if (HasFailure()) return;
  testing::CheckGroupCounters(c, counters, expected, nodes);
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
