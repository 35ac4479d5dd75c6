// The GPU forward's expert-parallel pass with several ranks: four GpuTransformers, each its own
// thread, through the group scenario of engine/forward/testing/ep_group_scenario.h (each rank's
// sequences Attention-DP, the last rank idle at first, against the single device — the
// product's CPU forward; then the exchange's counters) — flat and on 2 nodes of 2 ranks (the
// node-level dedup's two-stage exchange, engine/forward/node_exchange.h, with its packing,
// gathers and sums on the device). On a machine with four GPUs the group is NCCL, one device a
// rank; with fewer (the device machine has one, and NCCL refuses two ranks on one device) the
// ranks share device 0 and their collectives go through host copies and Gloo
// (testing::StagedCommunicator). ep_forward_runner_test runs the same scenario in CI on the CPU
// emulation of the device operations. Needs a GPU (tag gpu).
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/forward/testing/ep_group_scenario.h"
#include "engine/forward/testing/random_model.h"
#include "engine/forward/testing/rank_view.h"
#include "engine/gpu/gpu_transformer.h"
#include "engine/gpu/nccl_communicator.h"
#include "engine/gpu/testing/staged_communicator.h"
#include "engine/model/forward_io.h"
#include "engine/parallel/gloo_communicator.h"
#include "gloo/rendezvous/hash_store.h"
#include "gtest/gtest.h"
#include "kernels/cuda/cuda_status.h"
#include "planner/placement/placement.h"
#include "planner/placement/topology.h"

namespace semmoe::engine::gpu {
namespace {

using model::Arch;

constexpr int kRanks = 4;

enum class Layout { kRandom, kNodes, kNodesReplicated };

struct Case {
  Arch arch;
  Layout layout;
};

std::string Name(const ::testing::TestParamInfo<Case>& info) {
  const char* layout[] = {"random_flat", "nodes", "nodes_replicated"};
  return absl::StrCat(model::ArchName(info.param.arch), "_",
                      layout[static_cast<int>(info.param.layout)]);
}

// The group's communicator for rank r: NCCL on device r with four GPUs, else staged on device 0.
absl::StatusOr<std::unique_ptr<Communicator>> MakeComm(gloo::rendezvous::Store& store, int r,
                                                       bool nccl) {
  if (nccl) {
    auto comm = NcclCommunicator::Create(store, {.rank = r, .size = kRanks, .device = r});
    if (!comm.ok()) return comm.status();
    return std::unique_ptr<Communicator>(std::move(*comm));
  }
  auto host = GlooCommunicator::Create(store, {.rank = r, .size = kRanks, .prefix = "staged"});
  if (!host.ok()) return host.status();
  return std::unique_ptr<Communicator>(
      std::make_unique<testing::StagedCommunicator>(std::move(*host)));
}

class GpuEpGroupTest : public ::testing::TestWithParam<Case> {};

TEST_P(GpuEpGroupTest, EveryRankMatchesTheSingleDevice) {
  auto devices = kernels::cuda::DeviceCount();
  ASSERT_TRUE(devices.ok() && *devices > 0) << "needs a GPU";
  const bool nccl = *devices >= kRanks;
  const Case& param = GetParam();
  const model::ModelConfig c = forward::testing::RandomModelConfig(param.arch);
  const model::ModelWeights weights = forward::testing::RandomWeights(c, 37);
  planner::Placement placement =
      *planner::Placement::Random(c.MoeLayers(), c.num_experts, kRanks, /*seed=*/11);
  if (param.layout == Layout::kNodesReplicated) {
    placement = forward::testing::WithOneReplicaPerDevice(placement);
  }
  const bool nodes = param.layout != Layout::kRandom;
  const planner::Topology topology = *planner::Topology::Parse("2x2");

  gloo::rendezvous::HashStore store;
  std::vector<std::vector<MoeLayerCounters>> counters(kRanks);
  std::vector<forward::testing::RankExpectation> expected(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      const int device = nccl ? r : 0;
      ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
      auto comm = MakeComm(store, r, nccl);
      ASSERT_TRUE(comm.ok()) << comm.status();
      auto gpu = GpuTransformer::Create(c, weights,
                                        {.device = device,
                                         .num_pages = forward::testing::kScenarioPages,
                                         .page_size = forward::testing::kScenarioPageSize,
                                         .placement = &placement,
                                         .comm = comm->get(),
                                         .topology = nodes ? &topology : nullptr});
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      expected[r] = forward::testing::RunRankScenario(
          c, weights, placement, r, kRanks,
          [&](absl::Span<const model::SequenceInput> batch, const model::ForwardOptions& options) {
            return (*gpu)->Forward(batch, options);
          });
      counters[r] = (*gpu)->ep_counters();
    });
  }
  for (std::thread& t : threads) t.join();
  if (HasFailure()) return;
  forward::testing::CheckGroupCounters(c, counters, expected, nodes);
}

INSTANTIATE_TEST_SUITE_P(All, GpuEpGroupTest,
                         ::testing::Values(Case{Arch::kQwen3Moe, Layout::kRandom},
                                           Case{Arch::kQwen3Moe, Layout::kNodes},
                                           Case{Arch::kDeepseekV3, Layout::kNodesReplicated}),
                         Name);

}  // namespace
}  // namespace semmoe::engine::gpu
