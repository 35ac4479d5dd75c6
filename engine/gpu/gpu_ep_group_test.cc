// The GPU forward's expert-parallel pass with several ranks: four GpuTransformers, each its own
// thread, only its own experts' work, its sequences Attention-DP (the last rank idle at first),
// against the single device (the product's CPU forward) — flat and on 2 nodes of 2 ranks (the
// node-level dedup's two-stage exchange, engine/forward/node_exchange.h, with its packing,
// gathers and sums on the device). On a machine with four GPUs the group is NCCL, one device a
// rank; with fewer (the device machine has one, and NCCL refuses two ranks on one device) the
// ranks share device 0 and their collectives go through host copies and Gloo
// (testing::StagedCommunicator). ep_forward_runner_test runs the same cases in CI on the CPU
// emulation of the device operations. Needs a GPU (tag gpu).
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/forward/cpu_forward.h"
#include "engine/forward/testing/random_model.h"
#include "engine/forward/testing/rank_view.h"
#include "engine/gpu/gpu_transformer.h"
#include "engine/gpu/nccl_communicator.h"
#include "engine/gpu/testing/staged_communicator.h"
#include "engine/model/forward_io.h"
#include "engine/parallel/gloo_communicator.h"
#include "engine/runtime/kv_cache.h"
#include "gloo/rendezvous/hash_store.h"
#include "gtest/gtest.h"
#include "kernels/cuda/cuda_status.h"
#include "planner/placement/placement.h"
#include "planner/placement/topology.h"

namespace semmoe::engine::gpu {
namespace {

using model::Arch;
using model::LogitsMode;
using model::SequenceInput;

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
  const planner::Topology topology = *planner::Topology::Parse(nodes ? "2x2" : "1x4");
  const int moe_layers = static_cast<int>(c.MoeLayers().size());
  constexpr int kPages = 48, kPageSize = 4;

  gloo::rendezvous::HashStore store;
  std::vector<std::vector<MoeLayerCounters>> counters(kRanks);
  std::vector<int64_t> want_local(kRanks, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      const int device = nccl ? r : 0;
      ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
      auto comm = MakeComm(store, r, nccl);
      ASSERT_TRUE(comm.ok()) << comm.status();
      auto gpu = GpuTransformer::Create(c, weights,
                                        {.device = device,
                                         .num_pages = kPages,
                                         .page_size = kPageSize,
                                         .placement = &placement,
                                         .comm = comm->get(),
                                         .topology = nodes ? &topology : nullptr});
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      auto reference =
          forward::CpuForward::Create(c, weights, {.num_pages = kPages, .page_size = kPageSize});
      ASSERT_TRUE(reference.ok()) << reference.status();
      auto cache = runtime::PagedKvCache::Create({.num_layers = c.num_layers,
                                                  .shape = c.kv_shape(),
                                                  .page_size = kPageSize,
                                                  .num_pages = kPages});
      ASSERT_TRUE(cache.ok());
      std::vector<std::vector<int32_t>> prompts(2);
      for (int s = 0; s < 2; ++s) {
        for (int t = 0; t < 3 + 5 * s + 2 * r; ++t) {
          prompts[s].push_back((17 * t + 31 * s + 43 * r + 5) % c.vocab_size);
        }
      }
      std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
      for (int s = 0; s < 2; ++s) {
        seqs.push_back((*cache)->NewSequence());
        ASSERT_TRUE((*cache)->Reserve(*seqs.back(), 40).ok());
      }
      const bool late = r == kRanks - 1;
      std::vector<int32_t> next(2, 5);
      for (int pass = 0; pass < 4; ++pass) {
        std::vector<SequenceInput> batch;
        const int started = late ? 1 : 0;
        if (pass == started) {
          batch = {{prompts[0], 0, seqs[0].get(), LogitsMode::kAll},
                   {prompts[1], 0, seqs[1].get(), LogitsMode::kLast}};
        } else if (pass > started) {
          for (int s = 0; s < 2; ++s) {
            const int position = static_cast<int>(prompts[s].size()) + pass - started - 1;
            batch.push_back({absl::MakeConstSpan(&next[s], 1), position, seqs[s].get()});
          }
        }
        auto got = (*gpu)->Forward(batch, {.collect_routing = true});
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
        int64_t local = 0;
        for (int l = 0; l < moe_layers; ++l) {
          EXPECT_EQ(got->routing[l].expert_ids, want->routing[l].expert_ids) << what;
          for (int32_t e : want->routing[l].expert_ids) local += placement.Serving(l, e, r) == r;
        }
        int64_t got_local = 0;
        for (int64_t n : got->local_activations) got_local += n;
        EXPECT_EQ(got_local, local) << what;
        want_local[r] += local;
      }
      counters[r] = (*gpu)->ep_counters();
    });
  }
  for (std::thread& t : threads) t.join();
  if (HasFatalFailure()) return;

  // Every byte sent is received, across nodes too, and tokens do cross between nodes.
  for (int l = 0; l < moe_layers; ++l) {
    int64_t sent = 0, received = 0, cross_sent = 0, cross_received = 0;
    for (int r = 0; r < kRanks; ++r) {
      const MoeLayerCounters& m = counters[r].at(l);
      EXPECT_EQ(m.local_activations + m.remote_activations, m.tokens * c.top_k) << "rank " << r;
      sent += m.dispatch_bytes_sent + m.combine_bytes_sent;
      received += m.dispatch_bytes_received + m.combine_bytes_received;
      cross_sent += m.cross_node_bytes_sent;
      cross_received += m.cross_node_bytes_received;
    }
    EXPECT_GT(sent, 0) << "MoE layer " << l;
    EXPECT_EQ(sent, received) << "MoE layer " << l;
    EXPECT_EQ(cross_sent, cross_received) << "MoE layer " << l;
    if (nodes) {
      EXPECT_GT(cross_sent, 0) << "MoE layer " << l;
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    int64_t local = 0;
    for (const MoeLayerCounters& m : counters[r]) local += m.local_activations;
    EXPECT_EQ(local, want_local[r]) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(All, GpuEpGroupTest,
                         ::testing::Values(Case{Arch::kQwen3Moe, Layout::kRandom},
                                           Case{Arch::kQwen3Moe, Layout::kNodes},
                                           Case{Arch::kDeepseekV3, Layout::kNodesReplicated}),
                         Name);

}  // namespace
}  // namespace semmoe::engine::gpu
