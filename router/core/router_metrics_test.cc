#include "router/core/router_metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::router {
namespace {

using ::testing::HasSubstr;

TEST(RouterMetricsTest, OutcomesArmsAndRanks) {
  rpc::RouterStats s;
  s.set_completed(9);
  s.set_failed(1);
  s.set_rejected(4);
  s.set_queued(2);
  rpc::ArmStats* a = s.add_arms();
  a->set_name("B");
  a->set_share_percent(10);
  a->set_completed(3);
  a->set_completion_tokens(96);
  a->set_placement_version(5);
  a->set_engines_version(4);
  a->set_rollout_target(5);
  a->set_tables_error("version 5 unusable: ...");
  a->set_load_window_s(42);
  rpc::LayerLoad* load = a->add_layer_loads();
  load->set_layer(3);
  load->set_imbalance(0.25);
  rpc::HotExpert* hot = load->add_hot_experts();
  hot->set_expert(17);
  hot->set_activations(900);
  rpc::RankStats* r = a->add_ranks();
  r->set_rank(1);
  r->set_usable(false);
  r->set_kv_free_tokens(-1);
  metrics::Histogram ttft(metrics::LatencyBuckets());
  ttft.Observe(0.02);
  EngineGroup::Telemetry t{.ttft = ttft.Snapshot(), .prompt_tokens = 40};
  t.tpot = t.e2e = t.queue = metrics::Histogram({1}).Snapshot();
  const std::string text = RouterMetricsText(s, {t});
  EXPECT_THAT(text, HasSubstr("semmoe_router_requests_total{outcome=\"rejected\"} 4"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_requests_total{outcome=\"failed\"} 1"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_queue_depth 2"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_time_to_first_token_seconds_bucket{arm=\"B\","
                              "le=\"0.025\"} 1"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_prompt_tokens_total{arm=\"B\"} 40"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_generation_tokens_total{arm=\"B\"} 96"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_placement_version{arm=\"B\",of=\"engines\"} 4"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_rollout_target_version{arm=\"B\"} 5"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_tables_ok{arm=\"B\"} 0"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_rank_usable{arm=\"B\",rank=\"1\"} 0"));
  EXPECT_THAT(text,
              HasSubstr("semmoe_router_moe_expert_load_imbalance{arm=\"B\",layer=\"3\"} 0.25"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_moe_hot_expert_activations{arm=\"B\",layer=\"3\","
                              "place=\"1\",expert=\"17\"} 900"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_moe_expert_load_window_seconds{arm=\"B\"} 42"));
  EXPECT_EQ(text.find("semmoe_router_rank_kv_cache_free_tokens"), std::string::npos);
}

TEST(RouterMetricsTest, TheOnlyGroupIsTheDefaultArm) {
  rpc::RouterStats s;
  s.add_arms();
  EXPECT_THAT(RouterMetricsText(s, {}),
              HasSubstr("semmoe_router_arm_share_percent{arm=\"default\"}"));
}

TEST(RouterMetricsTest, TheTimeRuleSaysWhichPlacementItKept) {
  rpc::RouterStats s;
  s.set_policy("semantic");
  EXPECT_EQ(RouterMetricsText(s, {}).find("semmoe_router_time_rule"), std::string::npos);
  s.set_policy("time");
  s.mutable_time_rule()->set_kept_time(7);
  s.mutable_time_rule()->set_kept_least_loaded(3);
  s.mutable_time_rule()->set_last_predicted_ms(1.5);
  s.mutable_time_rule()->set_last_vanilla_ms(2);
  s.mutable_time_rule()->set_cluster("h200");
  const std::string text = RouterMetricsText(s, {});
  EXPECT_THAT(text, HasSubstr("semmoe_router_time_rule_windows_total{kept=\"time\"} 7"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_time_rule_windows_total{kept=\"least_loaded\"} 3"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_time_rule_windows_total{kept=\"round_robin\"} 0"));
  EXPECT_THAT(text, HasSubstr("semmoe_router_time_rule_predicted_moe_layer_ms{rule=\"vanilla\","
                              "cluster=\"h200\"} 2"));
}

}  // namespace
}  // namespace semmoe::router
