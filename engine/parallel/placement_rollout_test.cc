#include "engine/parallel/placement_rollout.h"

#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "engine/forward/cpu_forward.h"
#include "engine/parallel/gloo_communicator.h"
#include "engine/parallel/group_engine.h"
#include "engine/parallel/testing/tiny_group.h"
#include "engine/text/config.h"
#include "gloo/rendezvous/hash_store.h"
#include "gtest/gtest.h"

namespace semmoe::engine {
namespace {

using testing::Collect;
using testing::Expected;
using testing::Prompt;
using testing::TinyDir;

constexpr int kRanks = 2, kExperts = 8;

// Version v's placement: vanilla for 1, seeded random ones after; version 9 is for 4 devices,
// version 10 built for 2 nodes of one rank (the group runs one node of two).
std::string PlacementJson(int64_t v) {
  const int devices = v == 9 ? 4 : kRanks;
  auto p = v == 1 ? planner::Placement::Vanilla({0, 1}, kExperts, devices)
                  : planner::Placement::Random({0, 1}, kExperts, devices, /*seed=*/v);
  if (v == 10) p = p->WithTopology(*planner::Topology::Parse("2x1"));
  return p->ToJson();
}

// The group's topology, as `engine serve` without --topology has it: one node.
const planner::Topology& GroupTopology() {
  static const auto* flat = new planner::Topology(*planner::Topology::Flat(kRanks));
  return *flat;
}

absl::StatusOr<std::unique_ptr<RankPlacement>> Build(int64_t v) {
  auto config = model::LoadModelConfig(TinyDir());
  if (!config.ok()) return config.status();
  return BuildRankPlacement({.version = v,
                             .placement_json = PlacementJson(v),
                             .placement_name = absl::StrCat("version ", v)},
                            *config, kRanks, /*use_layer_tables=*/true, &GroupTopology());
}

// A device rank's forward, emulated on the host: its own copy of the rank's weights (what a GPU
// holds after the upload), a CpuForward over them with an arena of the batch's pages, and a
// group of its own (NCCL's, on a GPU). Its SwitchPlacement takes the gained experts and frees
// the lost, as GpuTransformer's does.
class EmulatedDevice : public RankForward {
 public:
  static constexpr int64_t kKvBytes = 4 << 20;

  static std::unique_ptr<EmulatedDevice> Create(const RankModel& model, Communicator& comm) {
    auto d = std::unique_ptr<EmulatedDevice>(new EmulatedDevice(model.comm().rank()));
    d->weights_ = model.weights();
    const bool tp = model.attention() == AttentionMode::kTp;
    auto cpu = forward::CpuForward::Create(
        model.local_config(), d->weights_,
        {.num_pages = runtime::PagedKvCache::PagesForModel(model.local_config(), 16, kKvBytes),
         .page_size = 16,
         .ep = {.placement = &model.placement(),
                .comm = &comm,
                .attention_tp = tp,
                .predictor = tp ? model.predictor() : nullptr,
                .token_balance_eps = model.token_balance_eps()}});
    EXPECT_TRUE(cpu.ok()) << cpu.status();
    if (!cpu.ok()) return nullptr;
    d->cpu_ = std::move(*cpu);
    return d;
  }
  absl::StatusOr<model::ForwardOutput> Forward(absl::Span<const model::SequenceInput> batch,
                                               const model::ForwardOptions& options) override {
    return cpu_->Forward(batch, options);
  }
  RankForwardCounters counters() const override { return {.layers = cpu_->ep_counters()}; }
  absl::Status SwitchPlacement(const planner::Placement& next,
                               absl::Span<const GainedExpertWeights> gained,
                               const DevicePredictor* predictor) override {
    for (const GainedExpertWeights& g : gained) {
      weights_.layers[g.layer].experts[g.expert] = *g.weights;
    }
    RETURN_IF_ERROR(cpu_->SwitchPlacement(next, weights_, predictor));
    for (int i = 0; i < next.num_layers(); ++i) {
      for (int e = 0; e < next.num_experts(); ++e) {
        if (!next.Holds(i, rank_, e)) weights_.layers[next.moe_layers()[i]].experts[e] = {};
      }
    }
    return absl::OkStatus();
  }
  const model::ModelWeights& weights() const { return weights_; }

 private:
  explicit EmulatedDevice(int rank) : rank_(rank) {}
  const int rank_;
  model::ModelWeights weights_;
  std::unique_ptr<forward::CpuForward> cpu_;
};

struct Rank {
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<RankModel> model;
  std::unique_ptr<Communicator> device_comm;  // An emulated device's group.
  std::unique_ptr<EmulatedDevice> device;
  std::unique_ptr<PlacementRollout> rollout;
  std::unique_ptr<GroupEngine> engine;
};

class PlacementRolloutTest : public ::testing::TestWithParam<AttentionMode> {
 protected:
  // `with_stager` false: the ranks cannot stage, every proposal is refused. `device`: each rank's
  // forward is an EmulatedDevice, and the rank keeps no host weights (as a GPU rank).
  void Start(AttentionMode mode, bool with_stager = true, bool device = false) {
    gloo::rendezvous::HashStore store;
    ranks_.resize(kRanks);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r) {
      threads.emplace_back([&, r] {
        Rank& rank = ranks_[r];
        rank.comm = *GlooCommunicator::Create(store, {.rank = r, .size = kRanks, .prefix = "pr"});
        auto model = RankModel::Create(TinyDir(), *Build(1), *rank.comm,
                                       {.attention = mode, .cpu_forward = !device});
        ASSERT_TRUE(model.ok()) << model.status();
        rank.model = std::move(*model);
        GroupEngineOptions options;
        if (device) {
          rank.device_comm =
              *GlooCommunicator::Create(store, {.rank = r, .size = kRanks, .prefix = "dev"});
          rank.device = EmulatedDevice::Create(*rank.model, *rank.device_comm);
          ASSERT_NE(rank.device, nullptr);
          auto released = rank.model->ReleaseHostWeights();
          ASSERT_TRUE(released.ok()) << released.status();
          EXPECT_GT(*released, 0);
          EXPECT_FALSE(rank.model->holds_host_weights());
          options.device = rank.device.get();
          options.batch.kv_cache_bytes = EmulatedDevice::kKvBytes;
        } else {  // The CPU forward reads the host weights in place: they stay.
          EXPECT_EQ(rank.model->ReleaseHostWeights().status().code(),
                    absl::StatusCode::kFailedPrecondition);
          EXPECT_TRUE(rank.model->holds_host_weights());
        }
        PlacementRollout::Stager stager = [this, r](int64_t v) {
          // Rank 1 cannot load version 7 (say, its disk failed).
          if (v == 7 && r == 1) {
            return absl::StatusOr<std::unique_ptr<RankPlacement>>(
                absl::UnavailableError("checkpoint unreadable"));
          }
          if (v == 8) release_.WaitForNotification();  // A planner that hangs on version 8.
          return Build(v);
        };
        rank.rollout = std::make_unique<PlacementRollout>(
            *rank.model, with_stager ? stager : nullptr, "this group serves from GPUs");
        if (device) rank.rollout->set_device(rank.device.get());
        options.rollout = rank.rollout.get();
        auto engine = GroupEngine::Create(*rank.model, options);
        ASSERT_TRUE(engine.ok()) << engine.status();
        rank.engine = std::move(*engine);
      });
    }
    for (auto& t : threads) t.join();
    for (Rank& r : ranks_) ASSERT_NE(r.engine, nullptr);
    for (Rank& r : ranks_) r.engine->Start();
  }

  void TearDown() override {
    if (!release_.HasBeenNotified()) release_.Notify();  // No stager left waiting.
    if (ranks_.empty() || ranks_[0].engine == nullptr) return;
    ranks_[0].engine->RequestStop();
    for (Rank& r : ranks_) EXPECT_TRUE(r.engine->Wait().ok());
  }

  // Waits until every rank serves `version` (or refused it, with `refused`).
  void WaitFor(int64_t version, bool refused = false) {
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    for (;;) {
      bool all = true;
      for (Rank& r : ranks_) {
        const RolloutStats s = r.rollout->stats();
        all &= refused ? s.refused_version == version : s.serving_version == version;
      }
      if (all) return;
      ASSERT_LT(absl::Now(), deadline) << "version " << version << " never reached every rank";
      absl::SleepFor(absl::Milliseconds(2));
    }
  }

  // Request i (`tokens` greedy tokens): under Attention-DP to rank i % G, else to the leader.
  std::shared_ptr<Collect> Submit(int i, int tokens) {
    auto sink = std::make_shared<Collect>();
    const int rank = GetParam() == AttentionMode::kDp ? i % kRanks : 0;
    const absl::Status submitted = ranks_[rank].engine->Submit({.id = absl::StrCat("r", i),
                                                                .prompt = Prompt(3 + i % 7, i),
                                                                .max_tokens = tokens,
                                                                .ignore_eos = true},
                                                               sink);
    EXPECT_TRUE(submitted.ok()) << submitted;
    if (!submitted.ok()) sink->OnError(submitted);  // Nothing else would end its wait.
    return sink;
  }

  // Each rank holds exactly the experts of the version it serves.
  void ExpectHoldsOnly(int64_t version) {
    auto p = planner::Placement::FromJson(PlacementJson(version));
    for (int r = 0; r < kRanks; ++r) {
      const model::ModelWeights& w = ranks_[r].device != nullptr ? ranks_[r].device->weights()
                                                                 : ranks_[r].model->weights();
      for (int i = 0; i < p->num_layers(); ++i) {
        for (int e = 0; e < kExperts; ++e) {
          EXPECT_EQ(w.layers[p->moe_layers()[i]].experts[e].loaded(), p->Holds(i, r, e))
              << "rank " << r << " layer " << i << " expert " << e;
        }
      }
    }
  }

  std::vector<Rank> ranks_;
  absl::Notification release_;
};

// Requests keep flowing while the group moves 1 → 2 → 7 (refused) → 1: none fails, every output
// equals one device's, and every rank switches in the same agreement round.
TEST_P(PlacementRolloutTest, SwitchesUnderLoadWithoutChangingOutputs) {
  constexpr int kRequests = 24, kTokens = 6;
  const auto expected = Expected(kRequests, kTokens);
  Start(GetParam());
  std::vector<std::shared_ptr<Collect>> sinks;
  auto submit = [&](int i) { sinks.push_back(Submit(i, kTokens)); };
  for (int i = 0; i < 6; ++i) submit(i);
  ranks_[1].rollout->Propose(2);  // Not the leader: ignored.
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_EQ(ranks_[0].rollout->stats().target_version, 0);
  ranks_[0].rollout->Propose(2);
  for (int i = 6; i < 12; ++i) submit(i);
  WaitFor(2);
  ExpectHoldsOnly(2);
  const RolloutStats a = ranks_[0].rollout->stats(), b = ranks_[1].rollout->stats();
  EXPECT_EQ(a.epoch, 1);
  EXPECT_EQ(a.switch_round, b.switch_round);
  auto one = planner::Placement::FromJson(PlacementJson(1));
  auto two = planner::Placement::FromJson(PlacementJson(2));
  for (int r = 0; r < kRanks; ++r) {
    const RolloutStats s = ranks_[r].rollout->stats();
    const int64_t gained = static_cast<int64_t>(GainedExperts(*one, *two, r).size());
    EXPECT_GT(gained, 0);
    EXPECT_EQ(s.last_experts_loaded, gained);
    EXPECT_EQ(s.last_experts_freed, gained);  // Balanced: as many leave as arrive.
    EXPECT_GT(s.last_bytes_loaded, 0);
    EXPECT_EQ(s.peak_staged_bytes, s.last_bytes_loaded);  // Only the moved experts.
    EXPECT_EQ(s.target_version, 0);
  }

  // Version 7: rank 1 cannot stage it; every rank says so and stays on 2.
  ranks_[0].rollout->Propose(7);
  for (int i = 12; i < 18; ++i) submit(i);
  WaitFor(7, /*refused=*/true);
  for (Rank& r : ranks_) {
    const RolloutStats s = r.rollout->stats();
    EXPECT_EQ(s.serving_version, 2);
    EXPECT_EQ(s.last_error,
              "version 7 refused: rank 1: checkpoint unreadable; the group stays on version 2");
  }
  ExpectHoldsOnly(2);
  // Version 9 is for 4 devices: refused by BuildRankPlacement's check, naming it.
  ranks_[0].rollout->Propose(9);
  WaitFor(9, /*refused=*/true);
  EXPECT_NE(ranks_[1].rollout->stats().last_error.find("places experts on 4 devices but the "
                                                       "group has 2 ranks"),
            std::string::npos)
      << ranks_[1].rollout->stats().last_error;

  // Version 10 was built for another topology: refused, naming both.
  ranks_[0].rollout->Propose(10);
  WaitFor(10, /*refused=*/true);
  EXPECT_NE(ranks_[1].rollout->stats().last_error.find(
                "built for topology 2x1; this group runs 1x2"),
            std::string::npos)
      << ranks_[1].rollout->stats().last_error;

  // Back to 1 (a rollback), under load.
  ranks_[0].rollout->Propose(1);
  for (int i = 18; i < kRequests; ++i) submit(i);
  WaitFor(1);
  ExpectHoldsOnly(1);
  EXPECT_EQ(ranks_[1].rollout->stats().epoch, 2);
  for (int i = 0; i < kRequests; ++i) {
    sinks[i]->done.WaitForNotification();
    ASSERT_TRUE(sinks[i]->status.ok()) << i << ": " << sinks[i]->status;
    EXPECT_EQ(sinks[i]->result.tokens, expected.at(absl::StrCat("r", i))) << i;
  }
  // GroupEngine's stats carry the rollout's.
  EXPECT_EQ(ranks_[0].engine->stats().rollout.serving_version, 1);
}

// A new proposal while a rank is still fetching the last one (its planner hangs): the group
// moves on to the new one at once — the serving loop never waits for the stale fetch — and
// what that fetch brings later is dropped.
TEST_P(PlacementRolloutTest, ANewProposalDropsAStalledOne) {
  Start(GetParam());
  ranks_[0].rollout->Propose(8);
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (ranks_[1].rollout->stats().target_version != 8) {
    ASSERT_LT(absl::Now(), deadline);
    absl::SleepFor(absl::Milliseconds(1));
  }
  ranks_[0].rollout->Propose(2);
  WaitFor(2);
  auto sink = std::make_shared<Collect>();  // Serving goes on.
  ASSERT_TRUE(
      ranks_[0]
          .engine
          ->Submit({.id = "r0", .prompt = Prompt(3, 0), .max_tokens = 4, .ignore_eos = true}, sink)
          .ok());
  sink->done.WaitForNotification();
  EXPECT_TRUE(sink->status.ok()) << sink->status;
  EXPECT_EQ(sink->result.tokens, Expected(1, 4).at("r0"));
  release_.Notify();  // Version 8's fetch returns now; nobody wants it any more.
  absl::SleepFor(absl::Milliseconds(50));
  for (Rank& r : ranks_) {
    const RolloutStats s = r.rollout->stats();
    EXPECT_EQ(s.serving_version, 2);
    EXPECT_EQ(s.target_version, 0);
    EXPECT_FALSE(s.staged);
  }
  ExpectHoldsOnly(2);
}

TEST_P(PlacementRolloutTest, WithoutAStagerEveryProposalIsRefused) {
  Start(GetParam(), /*with_stager=*/false);
  ranks_[0].rollout->Propose(2);
  WaitFor(2, /*refused=*/true);
  EXPECT_EQ(ranks_[1].rollout->stats().last_error,
            "version 2 refused: rank 0: this group serves from GPUs; the group stays on version 1");
  ExpectHoldsOnly(1);
}

// A device group (each rank's forward emulated as a device, no host weights kept): the rollout
// moves the device's experts — loaded from the checkpoint, handed over, not kept on the host —
// under load, and every output stays one device's.
TEST_P(PlacementRolloutTest, DeviceRanksSwitchWithoutAHostCopy) {
  constexpr int kRequests = 12, kTokens = 5;
  const auto expected = Expected(kRequests, kTokens);
  Start(GetParam(), /*with_stager=*/true, /*device=*/true);
  std::vector<std::shared_ptr<Collect>> sinks;
  auto submit = [&](int i) { sinks.push_back(Submit(i, kTokens)); };
  for (int i = 0; i < 4; ++i) submit(i);
  ranks_[0].rollout->Propose(2);
  for (int i = 4; i < 8; ++i) submit(i);
  WaitFor(2);
  ExpectHoldsOnly(2);
  auto one = planner::Placement::FromJson(PlacementJson(1));
  auto two = planner::Placement::FromJson(PlacementJson(2));
  for (int r = 0; r < kRanks; ++r) {
    const RolloutStats s = ranks_[r].rollout->stats();
    const int64_t gained = static_cast<int64_t>(GainedExperts(*one, *two, r).size());
    EXPECT_EQ(s.last_experts_loaded, gained);
    EXPECT_EQ(s.last_experts_freed, gained);
    EXPECT_GT(s.last_bytes_freed, 0);
    EXPECT_FALSE(ranks_[r].model->holds_host_weights());
  }
  ranks_[0].rollout->Propose(1);
  for (int i = 8; i < kRequests; ++i) submit(i);
  WaitFor(1);
  ExpectHoldsOnly(1);
  for (int i = 0; i < kRequests; ++i) {
    sinks[i]->done.WaitForNotification();
    ASSERT_TRUE(sinks[i]->status.ok()) << i << ": " << sinks[i]->status;
    EXPECT_EQ(sinks[i]->result.tokens, expected.at(absl::StrCat("r", i))) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PlacementRolloutTest,
                         ::testing::Values(AttentionMode::kDp, AttentionMode::kTp),
                         [](const auto& info) { return AttentionModeName(info.param); });

}  // namespace
}  // namespace semmoe::engine
