#include "engine/server/engine_metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::engine {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(EngineMetricsTest, StatsBecomeSeries) {
  rpc::EngineStats s;
  s.set_rank(1);
  s.set_ranks(2);
  s.set_attention("dp");
  s.set_completed(7);
  s.set_cancelled(2);
  s.set_waiting(3);
  s.set_kv_free_tokens(250);
  s.set_kv_total_tokens(1000);
  s.set_prefill_tokens(90);
  s.set_decode_tokens(40);
  s.set_placement_version(5);
  rpc::MoeLayerStats* l = s.add_layers();
  l->set_layer(3);
  l->set_local_activations(30);
  l->set_remote_activations(10);
  l->set_lar(0.75);
  l->set_dispatch_bytes_sent(4096);
  l->set_cross_node_bytes_sent(1000);
  l->set_intra_node_bytes_received(2000);
  s.set_topology("2x4");
  s.set_node_dedup(true);
  l->set_served_activations(55);
  // 128 experts: expert e ran e % 10 activations — the top 8 are eight of the nines, lowest id
  // first, and no other expert gets a series.
  for (int e = 0; e < 128; ++e) l->add_expert_activations(e % 10);
  auto* a2a = s.add_collectives();
  a2a->set_name("all_to_all");
  a2a->set_calls(12);
  a2a->set_seconds(0.25);
  s.add_collectives()->set_name("barrier");  // Never called: no series.
  s.add_peer_bytes_sent(100);
  s.add_peer_bytes_sent(0);  // Rank 1's own: no series.
  s.add_peer_bytes_sent(300);
  const std::string text = EngineMetricsText(s);
  EXPECT_THAT(text, HasSubstr("semmoe_engine_requests_total{rank=\"1\",outcome=\"completed\"} 7"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_requests_total{rank=\"1\",outcome=\"cancelled\"} 2"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_requests_waiting{rank=\"1\"} 3"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_kv_cache_usage_ratio{rank=\"1\"} 0.75"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_prompt_tokens_total{rank=\"1\"} 90"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_generation_tokens_total{rank=\"1\"} 40"));
  EXPECT_THAT(text,
              HasSubstr("semmoe_engine_moe_local_activation_ratio{rank=\"1\",layer=\"3\"} 0.75"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_moe_activations_total{rank=\"1\",layer=\"3\","
                              "where=\"remote\"} 10"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_all_to_all_peer_bytes_total{rank=\"1\","
                              "peer=\"2\"} 300"));
  EXPECT_EQ(text.find("peer_bytes_total{rank=\"1\",peer=\"1\"}"), std::string::npos);
  EXPECT_THAT(text, HasSubstr("semmoe_engine_moe_served_activations_total{rank=\"1\","
                              "layer=\"3\"} 55"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_moe_hot_expert_activations{rank=\"1\",layer=\"3\","
                              "place=\"1\",expert=\"9\"} 9"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_moe_hot_expert_activations{rank=\"1\",layer=\"3\","
                              "place=\"8\",expert=\"79\"} 9"));
  EXPECT_EQ(text.find("place=\"9\""), std::string::npos);
  EXPECT_EQ(text.find("expert=\"89\""), std::string::npos);
  EXPECT_THAT(text, HasSubstr("semmoe_engine_all_to_all_bytes_total{rank=\"1\",layer=\"3\","
                              "phase=\"dispatch\",direction=\"sent\"} 4096"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_placement_version{rank=\"1\"} 5"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_node_bytes_total{rank=\"1\",layer=\"3\","
                              "link=\"cross_node\",direction=\"sent\"} 1000"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_node_bytes_total{rank=\"1\",layer=\"3\","
                              "link=\"intra_node\",direction=\"received\"} 2000"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_node_dedup{rank=\"1\",topology=\"2x4\"} 1"));
  EXPECT_THAT(text, HasSubstr("semmoe_engine_collective_calls_total{rank=\"1\",kind=\"all_to_all\"} 12"));
  EXPECT_THAT(text,
              HasSubstr("semmoe_engine_collective_seconds_total{rank=\"1\",kind=\"all_to_all\"} 0.25"));
  EXPECT_THAT(text, Not(HasSubstr("kind=\"barrier\"")));
}

TEST(EngineMetricsTest, ATpFollowerHasNoKvFreeSeries) {
  rpc::EngineStats s;
  s.set_kv_free_tokens(-1);
  const std::string text = EngineMetricsText(s);
  EXPECT_EQ(text.find("semmoe_engine_kv_cache_free_tokens"), std::string::npos);
  EXPECT_EQ(text.find("semmoe_engine_kv_cache_usage_ratio"), std::string::npos);
}

}  // namespace
}  // namespace semmoe::engine
