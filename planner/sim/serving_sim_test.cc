#include "planner/sim/serving_sim.h"

#include "gtest/gtest.h"
#include "planner/eval/evaluate.h"
#include "planner/eval/testing/small_trace.h"
#include "planner/placement/placement.h"
#include "planner/sim/replay.h"
#include "planner/sim/testing/fixtures.h"

namespace semmoe::planner::sim {
namespace {

using trace::TraceSet;

using ::semmoe::planner::testing::SmallTrace;

// Faster links and lighter latencies than the round profile, so that a step is short.
ClusterProfile Profile() {
  ClusterProfile p = testing::RoundProfile();
  p.intra_bw = {1e4, "t"};
  p.inter_bw = {1e3, "t"};
  p.a2a_efficiency = {1, "t"};
  p.collective_latency = {0.01, "t"};
  p.message_latency = {0.001, "t"};
  p.kernel_overhead = {0.0001, "t"};
  p.step_overhead = {0.005, "t"};
  return p;
}

ModelShape Shape() { return testing::TinyShape(); }

TEST(ServingSimTest, OneRequestAloneTakesExactlyItsPrefillStep) {
  const TraceSet t = SmallTrace();
  const Placement p = *Placement::Vanilla({0}, 4, 2);  // Experts 0,1 → 0; 2,3 → 1.
  auto replay = ReplayDp(t, p, RoundRobinRequests(t, 2));
  ASSERT_TRUE(replay.ok()) << replay.status();
  const ClusterProfile profile = Profile();
  const ModelShape shape = Shape();
  const Topology topo = *Topology::Nodes(2, 1);
  const StepCost cost(shape, profile, topo);
  auto r = Simulate(t, *replay, shape, cost, {.rate = 1, .requests = 1, .output_tokens = 1}, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 1);
  EXPECT_EQ(r->tokens, 2);

  // By hand: request 0 on rank 0; token 0 uses experts 0, 1 (rank 0), token 1 experts 0 (rank 0)
  // and 2 (rank 1): one row from rank 0 to rank 1.
  MoeTraffic traffic(2);
  traffic.rows = {0, 1, 0, 0};
  traffic.expert_rows = {3, 1};
  traffic.active_experts = {2, 1};
  traffic.own_tokens = {2, 0};
  const double attention = cost.Attention({.tokens = 2, .kv_read = 2, .attended = 3});
  const MoeTime m = cost.Moe(traffic, {attention, 0.0});
  const double step =
      profile.step_overhead.value + attention + m.dispatch + m.experts + m.combine + cost.LmHead(1);
  EXPECT_DOUBLE_EQ(r->step_s, step);
  EXPECT_DOUBLE_EQ(r->ttft_s.p50, step);
  EXPECT_DOUBLE_EQ(r->moe.dispatch, m.dispatch);
  EXPECT_DOUBLE_EQ(r->moe.wait, attention);
  EXPECT_DOUBLE_EQ(r->moe.total(), m.total());
  EXPECT_GT(r->a2a_share(), 0);
}

TEST(ServingSimTest, EveryRequestFinishesAndTheSloIsCounted) {
  const TraceSet t = SmallTrace();
  const Placement p = *Placement::Vanilla({0}, 4, 2);
  const Replay replay = *ReplayDp(t, p, RoundRobinRequests(t, 2));
  const ClusterProfile profile = Profile();
  const ModelShape shape = Shape();
  const Topology topo = *Topology::Nodes(2, 1);
  const StepCost cost(shape, profile, topo);
  const Workload w{.rate = 50, .requests = 200, .output_tokens = 5};
  auto loose = Simulate(t, replay, shape, cost, w, {.slo_ttft_s = 1e9, .slo_tpot_s = 1e9});
  ASSERT_TRUE(loose.ok()) << loose.status();
  EXPECT_EQ(loose->tokens, 200 * (2 + 4));  // Each: a 2-token prefill and 4 decodes.
  EXPECT_DOUBLE_EQ(loose->slo_attainment, 1.0);
  EXPECT_DOUBLE_EQ(loose->goodput_rps, loose->throughput_rps);
  EXPECT_GT(loose->tpot_s.p50, 0);
  EXPECT_LE(loose->ttft_s.p50, loose->ttft_s.p99);
  auto tight = Simulate(t, replay, shape, cost, w, {.slo_ttft_s = 0, .slo_tpot_s = 0});
  ASSERT_TRUE(tight.ok());
  EXPECT_EQ(tight->goodput_rps, 0);
  EXPECT_EQ(tight->slo_attainment, 0);
  // Faster links: a shorter MoE layer, never a longer one.
  ClusterProfile fast = profile;
  fast.inter_bw.value *= 100;
  const StepCost fast_cost(shape, fast, topo);
  auto quicker = Simulate(t, replay, shape, fast_cost, w, {});
  ASSERT_TRUE(quicker.ok());
  EXPECT_LT(quicker->moe.dispatch, loose->moe.dispatch);
}

TEST(ServingSimTest, NodeDedupCrossesOncePerNodeAndFansOutInside) {
  // 4 experts on 4 ranks (expert e on rank e), 2 nodes of 2; one token on rank 0 using experts
  // 2 and 3, both on node 1.
  TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 2;
  t.header.moe_layers = {0};
  ASSERT_TRUE(t.AddRequest("r0", {5}, {2, 3}).ok());
  const Placement p = *Placement::Vanilla({0}, 4, 4);
  const Replay replay = *ReplayDp(t, p, {0});
  const ClusterProfile profile = Profile();
  const ModelShape shape = Shape();
  const Topology topo = *Topology::Nodes(2, 2);
  const StepCost cost(shape, profile, topo);
  const Workload one{.rate = 1, .requests = 1, .output_tokens = 1};
  auto flat = Simulate(t, replay, shape, cost, one, {});
  auto dedup = Simulate(t, replay, shape, cost, one, {.node_dedup = true});
  ASSERT_TRUE(flat.ok() && dedup.ok());
  EXPECT_FALSE(flat->two_stage);
  EXPECT_TRUE(dedup->two_stage);
  MoeTraffic rows(4);  // Flat: rank 0 → 2 and rank 0 → 3.
  rows.rows[0 * 4 + 2] = rows.rows[0 * 4 + 3] = 1;
  rows.expert_rows = {0, 0, 1, 1};
  rows.active_experts = {0, 0, 1, 1};
  rows.own_tokens = {1, 0, 0, 0};
  const double attention = cost.Attention({.tokens = 1, .kv_read = 1, .attended = 1});
  const std::vector<double> per_rank = {attention, 0, 0, 0};
  EXPECT_DOUBLE_EQ(flat->moe.dispatch, cost.Moe(rows, per_rank).dispatch);
  MoeTraffic stages(4, /*two_stage=*/true);  // Once to node 1's gateway (rank 2), then 2 → 3.
  stages.rows[0 * 4 + 2] = 1;
  stages.local_rows[2 * 4 + 3] = 1;
  stages.expert_rows = rows.expert_rows;
  stages.active_experts = rows.active_experts;
  stages.own_tokens = rows.own_tokens;
  const MoeTime want = cost.Moe(stages, per_rank);
  EXPECT_DOUBLE_EQ(dedup->moe.dispatch, want.dispatch);
  EXPECT_DOUBLE_EQ(dedup->moe.combine, want.combine);
  // No dedup on one node of four, as the engine.
  const Topology one_node = *Topology::Flat(4);
  const StepCost flat_cost(shape, profile, one_node);
  EXPECT_FALSE(Simulate(t, replay, shape, flat_cost, one, {.node_dedup = true})->two_stage);
}

TEST(ServingSimTest, TheOnlineRouterPlacesEachRequestOnArrival) {
  const TraceSet t = SmallTrace();
  const Placement p = *Placement::Vanilla({0}, 4, 2);
  const Replay replay = *ReplayDp(t, p, RoundRobinRequests(t, 2));  // Request 0 on rank 0.
  const ClusterProfile profile = Profile();
  const ModelShape shape = Shape();
  const Topology topo = *Topology::Nodes(2, 1);
  const StepCost cost(shape, profile, topo);
  std::vector<std::vector<int64_t>> seen;
  ServingOptions o;
  o.route = [&](const RouteQuery& q) {
    EXPECT_EQ(q.trace_request, 0);
    EXPECT_EQ(q.load_tokens, 2 + 1);  // Its prompt and its one output token.
    EXPECT_EQ(q.prompt_tokens, 2);
    EXPECT_EQ(q.requests_in_flight, (std::vector<int64_t>{0, 0}));
    EXPECT_EQ(q.prefill_tokens, (std::vector<int64_t>{0, 0}));
    seen.push_back(q.tokens_in_flight);
    return 1;
  };
  auto r = Simulate(t, replay, shape, cost, {.rate = 1, .requests = 1, .output_tokens = 1}, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(seen, (std::vector<std::vector<int64_t>>{{0, 0}}));
  // From rank 1, request 0's experts 0 and 1 (rank 0) are remote: two tokens, one row each.
  MoeTraffic traffic(2);
  traffic.rows = {0, 0, 2, 0};
  traffic.expert_rows = {3, 1};
  traffic.active_experts = {2, 1};
  traffic.own_tokens = {0, 2};
  const double attention = cost.Attention({.tokens = 2, .kv_read = 2, .attended = 3});
  EXPECT_DOUBLE_EQ(r->moe.dispatch, cost.Moe(traffic, {0.0, attention}).dispatch);
  o.route = [](const RouteQuery&) { return 7; };
  EXPECT_EQ(Simulate(t, replay, shape, cost, {.rate = 1, .requests = 1}, o).status().code(),
            absl::StatusCode::kInternal);
}

TEST(ServingSimTest, WholePromptSumsCountWhatTokenByTokenCounts) {
  // 40 requests of 3-40 tokens, 2 MoE layers of 8 experts, top-2, on 4 ranks; arrivals fast
  // enough that steps hold several prompts, a budget that splits some.
  TraceSet t;
  t.header.num_experts = 8;
  t.header.top_k = 2;
  t.header.moe_layers = {0, 1};
  for (int r = 0; r < 40; ++r) {
    std::vector<uint32_t> ids;
    std::vector<uint16_t> experts;
    for (int i = 0; i < 3 + (r * 7) % 38; ++i) {
      ids.push_back(i);
      for (int l = 0; l < 2; ++l) {
        const int first = (r * 3 + i * 5 + l) % 8;
        experts.push_back(first);
        experts.push_back((first + 1 + (r + i) % 7) % 8);
      }
    }
    ASSERT_TRUE(t.AddRequest("r" + std::to_string(r), ids, experts).ok());
  }
  // The replay outlives the placement it was made from (as a Scenario's, moved around).
  const Replay replay = [&] {
    const Placement p = *Placement::Random({0, 1}, 8, 4, 3);
    return *ReplayDp(t, p, RoundRobinRequests(t, 4));
  }();
  const ClusterProfile profile = Profile();
  ModelShape shape = Shape();
  shape.moe_layer = {true, true};
  shape.num_experts = 8;
  const Topology topo = *Topology::Nodes(2, 2);
  const StepCost cost(shape, profile, topo);
  const Workload w{.rate = 400, .requests = 300, .output_tokens = 3};
  auto summed = Simulate(t, replay, shape, cost, w, {.max_batch_tokens = 64});
  auto token_by_token =
      Simulate(t, replay, shape, cost, w, {.max_batch_tokens = 64, .aggregate_prefills = false});
  ASSERT_TRUE(summed.ok() && token_by_token.ok());
  EXPECT_EQ(summed->tokens, token_by_token->tokens);
  EXPECT_EQ(summed->steps, token_by_token->steps);
  EXPECT_DOUBLE_EQ(summed->moe.dispatch, token_by_token->moe.dispatch);
  EXPECT_DOUBLE_EQ(summed->moe.experts, token_by_token->moe.experts);
  EXPECT_DOUBLE_EQ(summed->moe.combine, token_by_token->moe.combine);
  EXPECT_DOUBLE_EQ(summed->ttft_s.p99, token_by_token->ttft_s.p99);
}

TEST(ServingSimTest, MismatchesAndBadWorkloadsAreRefused) {
  const TraceSet t = SmallTrace();
  const Placement p = *Placement::Vanilla({0}, 4, 2);
  const Replay replay = *ReplayDp(t, p, RoundRobinRequests(t, 2));
  const ClusterProfile profile = Profile();
  ModelShape two = Shape();
  two.moe_layer = {true, true};
  const Topology topo = *Topology::Flat(2);
  const StepCost cost(two, profile, topo);
  auto r = Simulate(t, replay, two, cost, {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not match the trace"), std::string::npos);
  const ModelShape shape = Shape();
  const StepCost ok_cost(shape, profile, topo);
  EXPECT_FALSE(Simulate(t, replay, shape, ok_cost, {.rate = 0}, {}).ok());
  EXPECT_FALSE(Simulate(t, replay, shape, ok_cost, {.requests = 0}, {}).ok());
  EXPECT_FALSE(Simulate(t, replay, shape, ok_cost, {}, {.max_batch_tokens = 0}).ok());
  EXPECT_FALSE(ReplayDp(t, p, {0}).ok());
  EXPECT_FALSE(ReplayDp(t, p, {0, 5}).ok());
}

}  // namespace
}  // namespace semmoe::planner::sim
