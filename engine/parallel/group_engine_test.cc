#include "engine/parallel/group_engine.h"

#include <atomic>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/file.h"
#include "engine/parallel/gloo_communicator.h"
#include "engine/parallel/testing/tiny_group.h"
#include "gloo/rendezvous/hash_store.h"
#include "gtest/gtest.h"

namespace semmoe::engine {
namespace {

using testing::Collect;
using testing::Expected;
using testing::Prompt;
using testing::TinyDir;

struct Rank {
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<RankModel> model;
  std::unique_ptr<GroupEngine> engine;
};

// Connects and starts `g` ranks (threads) in `mode` under a random placement.
std::vector<Rank> StartGroup(int g, AttentionMode mode, const planner::Placement& placement) {
  gloo::rendezvous::HashStore store;
  std::vector<Rank> ranks(g);
  std::vector<std::thread> threads;
  for (int r = 0; r < g; ++r) {
    threads.emplace_back([&, r] {
      auto comm = GlooCommunicator::Create(store, {.rank = r, .size = g, .prefix = "ge"});
      ASSERT_TRUE(comm.ok()) << comm.status();
      ranks[r].comm = std::move(*comm);
      auto model = RankModel::Create(TinyDir(), placement, *ranks[r].comm, {.attention = mode});
      ASSERT_TRUE(model.ok()) << model.status();
      ranks[r].model = std::move(*model);
      auto engine = GroupEngine::Create(*ranks[r].model, {});
      ASSERT_TRUE(engine.ok()) << engine.status();
      ranks[r].engine = std::move(*engine);
    });
  }
  for (auto& t : threads) t.join();
  for (auto& r : ranks) {
    if (r.engine != nullptr) r.engine->Start();
  }
  return ranks;
}

void StopGroup(std::vector<Rank>& ranks) {
  ranks[0].engine->RequestStop();  // One rank asking stops them all.
  for (auto& r : ranks) EXPECT_TRUE(r.engine->Wait().ok());
}

class GroupEngineTest : public ::testing::TestWithParam<AttentionMode> {};

TEST_P(GroupEngineTest, ServesLikeOneDeviceFromEveryAcceptingRank) {
  const AttentionMode mode = GetParam();
  constexpr int kRequests = 9, kTokens = 5;
  const auto expected = Expected(kRequests, kTokens);
  auto placement = planner::Placement::Random({0, 1}, 8, 2, /*seed=*/3);
  std::vector<Rank> ranks = StartGroup(2, mode, *placement);
  ASSERT_NE(ranks[1].engine, nullptr);
  EXPECT_TRUE(ranks[0].engine->accepts_requests());
  EXPECT_EQ(ranks[1].engine->accepts_requests(), mode == AttentionMode::kDp);

  std::vector<std::shared_ptr<Collect>> sinks;
  for (int i = 0; i < kRequests; ++i) {
    auto sink = std::make_shared<Collect>();
    sinks.push_back(sink);
    // DP: alternate ranks (some requests overlap, some ranks idle while others work).
    GroupEngine& engine = *ranks[mode == AttentionMode::kDp ? i % 2 : 0].engine;
    ASSERT_TRUE(engine
                    .Submit({.id = absl::StrCat("r", i),
                             .prompt = Prompt(3 + i % 7, i),
                             .max_tokens = kTokens,
                             .ignore_eos = true},
                            sink)
                    .ok());
    if (i == 4) absl::SleepFor(absl::Milliseconds(20));  // A second wave after a pause.
  }
  for (int i = 0; i < kRequests; ++i) {
    sinks[i]->done.WaitForNotification();
    ASSERT_TRUE(sinks[i]->status.ok()) << sinks[i]->status;
    EXPECT_EQ(sinks[i]->result.tokens, expected.at(absl::StrCat("r", i))) << i;
    EXPECT_EQ(sinks[i]->tokens, sinks[i]->result.tokens);
  }
  if (mode == AttentionMode::kTp) {
    auto sink = std::make_shared<Collect>();
    EXPECT_EQ(ranks[1].engine->Submit({.id = "x", .prompt = {1}}, sink).code(),
              absl::StatusCode::kFailedPrecondition);
  }
  StopGroup(ranks);
  const GroupEngineStats s0 = ranks[0].engine->stats(), s1 = ranks[1].engine->stats();
  EXPECT_EQ(s0.forward_passes, s1.forward_passes);  // Lockstep.
  EXPECT_GT(s0.forward_passes, kTokens);
  EXPECT_EQ(s0.completed + s1.completed, kRequests);
  ASSERT_EQ(s0.attention_seconds_per_layer.size(), 2u);  // Timings per layer.
  EXPECT_GT(s0.attention_seconds_per_layer[1], 0.0);
  if (mode == AttentionMode::kTp) {
    ASSERT_EQ(s0.tp.srs_seconds_per_layer.size(), 2u);
    EXPECT_GT(s0.tp.srs_seconds_per_layer[0], 0.0);
    EXPECT_GT(s1.tp.sag_seconds_per_layer[1], 0.0);
  }
  int64_t remote = 0;
  for (const auto& l : s0.layers) remote += l.remote_activations;
  EXPECT_GT(remote, 0);
  // Both ranks know the whole group's counters from the last agreement round (the stop's): every
  // request, and every rank's activations.
  int64_t group_local = 0, group_remote = 0;
  for (const GroupEngineStats* s : {&s0, &s1}) {
    for (const auto& l : s->layers) {
      group_local += l.local_activations;
      group_remote += l.remote_activations;
    }
  }
  for (const GroupEngineStats* s : {&s0, &s1}) {
    EXPECT_EQ(s->group_serving.completed, kRequests) << "rank " << s->rank;
    EXPECT_EQ(s->group_serving.failed, 0);
    EXPECT_EQ(s->group_serving.local_activations, group_local) << "rank " << s->rank;
    EXPECT_EQ(s->group_serving.remote_activations, group_remote) << "rank " << s->rank;
    EXPECT_EQ(s->group_serving.output_tokens, kRequests * kTokens) << "rank " << s->rank;
    EXPECT_GT(s->group_serving.request_seconds, 0.0) << "rank " << s->rank;
  }
  // Attention-DP: each request's own activations (local ones and all) add up, over the
  // requests, to what the ranks' FFNs counted.
  if (mode == AttentionMode::kDp) {
    int64_t local_requests = 0, all_requests = 0, local_ranks = 0, all_ranks = 0;
    for (const auto& sink : sinks) {
      EXPECT_GT(sink->result.activations, 0);
      EXPECT_LE(sink->result.local_activations, sink->result.activations);
      local_requests += sink->result.local_activations;
      all_requests += sink->result.activations;
    }
    for (const GroupEngineStats* s : {&s0, &s1}) {
      for (const auto& l : s->layers) {
        local_ranks += l.local_activations;
        all_ranks += l.local_activations + l.remote_activations;
      }
    }
    EXPECT_EQ(local_requests, local_ranks);
    EXPECT_EQ(all_requests, all_ranks);
  }
}

// Attention-DP with replicas: every MoE layer of every pass all-gathers the ranks' routing (the
// holder choice), whose sizes — every rank's tokens in the pass — rode the step agreement: no
// collective of their own (all-gathers = agreement rounds + routing gathers). Answers are one
// device's.
TEST(GroupEngineDpTest, ReplicasGatherTheRoutingSizedByTheStepAgreement) {
  constexpr int kRequests = 6, kTokens = 4;
  const auto expected = Expected(kRequests, kTokens);
  auto base = planner::Placement::Random({0, 1}, 8, 2, /*seed=*/3);
  ASSERT_TRUE(base.ok());
  std::vector<std::vector<std::vector<int32_t>>> replicas(2, std::vector<std::vector<int32_t>>(2));
  for (int l = 0; l < 2; ++l) {
    for (int d = 0; d < 2; ++d) replicas[l][d] = {base->ExpertsOn(l, 1 - d)[0]};
  }
  auto placement = base->WithReplicas(replicas);
  ASSERT_TRUE(placement.ok()) << placement.status();
  std::vector<Rank> ranks = StartGroup(2, AttentionMode::kDp, *placement);
  ASSERT_NE(ranks[1].engine, nullptr);
  std::vector<std::shared_ptr<Collect>> sinks;
  for (int i = 0; i < kRequests; ++i) {
    sinks.push_back(std::make_shared<Collect>());
    ASSERT_TRUE(ranks[i % 2]
                    .engine
                    ->Submit({.id = absl::StrCat("r", i),
                              .prompt = Prompt(3 + i % 7, i),
                              .max_tokens = kTokens,
                              .ignore_eos = true},
                             sinks.back())
                    .ok());
  }
  for (int i = 0; i < kRequests; ++i) {
    sinks[i]->done.WaitForNotification();
    ASSERT_TRUE(sinks[i]->status.ok()) << sinks[i]->status;
    EXPECT_EQ(sinks[i]->result.tokens, expected.at(absl::StrCat("r", i))) << i;
  }
  StopGroup(ranks);
  for (const Rank& rank : ranks) {
    const GroupEngineStats s = rank.engine->stats();
    int64_t gathers = 0;
    for (const MoeLayerCounters& l : s.layers) gathers += l.routing_gathers;
    EXPECT_GE(s.forward_passes, kTokens) << "rank " << s.rank;
    EXPECT_EQ(gathers, 2 * s.forward_passes) << "rank " << s.rank;  // 2 MoE layers a pass.
    EXPECT_EQ(s.comm[CollectiveKind::kAllGather].calls, s.agreement_rounds + gathers)
        << "rank " << s.rank << ": an all-gather besides the agreement and the routing";
  }
}

TEST_P(GroupEngineTest, CancelFreesTheRequestAndStopFailsTheRest) {
  auto placement = planner::Placement::Vanilla({0, 1}, 8, 2);
  std::vector<Rank> ranks = StartGroup(2, GetParam(), *placement);
  auto cancelled = std::make_shared<Collect>();
  ASSERT_TRUE(
      ranks[0]
          .engine
          ->Submit({.id = "long", .prompt = Prompt(4, 1), .max_tokens = 400, .ignore_eos = true},
                   cancelled)
          .ok());
  while (cancelled->count.load() < 2) absl::SleepFor(absl::Milliseconds(1));
  ranks[0].engine->Cancel("long");
  cancelled->done.WaitForNotification();
  EXPECT_EQ(cancelled->status.code(), absl::StatusCode::kCancelled);
  // A bad request reaches its sink as an error, the group goes on.
  auto bad = std::make_shared<Collect>();
  ASSERT_TRUE(ranks[0].engine->Submit({.id = "bad", .prompt = {}}, bad).ok());
  bad->done.WaitForNotification();
  EXPECT_EQ(bad->status.code(), absl::StatusCode::kInvalidArgument);
  // A request still running when the group stops gets UNAVAILABLE.
  auto pending = std::make_shared<Collect>();
  ASSERT_TRUE(
      ranks[0]
          .engine
          ->Submit({.id = "p", .prompt = Prompt(4, 2), .max_tokens = 400, .ignore_eos = true},
                   pending)
          .ok());
  while (pending->count.load() == 0) absl::SleepFor(absl::Milliseconds(1));
  StopGroup(ranks);
  pending->done.WaitForNotification();
  EXPECT_EQ(pending->status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ranks[0].engine->Submit({.id = "late", .prompt = {1}}, pending).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(ranks[0].engine->stats().cancelled, 1);
}

INSTANTIATE_TEST_SUITE_P(Modes, GroupEngineTest,
                         ::testing::Values(AttentionMode::kDp, AttentionMode::kTp),
                         [](const auto& info) { return AttentionModeName(info.param); });

}  // namespace
}  // namespace semmoe::engine
