#include "planner/sim/lab_fit.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "planner/eval/evaluate.h"

namespace semmoe::planner::sim {
namespace {

nlohmann::json Setting() {
  return {{"setting", "g2_dp_semantic"},
          {"placement", "3"},
          {"router_policy", "semantic"},
          {"attn", "dp"},
          {"netlab_flags", "--node_topology"},
          {"work_dir", "/w"},
          {"rates", "1,2,4"},
          {"point_s", 12},
          {"ranks", 4},
          {"ranks_per_host", 2},
          {"link_mbit", 400},
          {"moe_layer_ms", 6.2},
          {"wait_ms", 2.5},
          {"dispatch_ms", 1.7},
          {"experts_ms", 0.2},
          {"combine_ms", 1.8},
          {"attention_ms", 0.26},
          {"max_rate_in_slo", 4}};
}

TEST(LabFitTest, ASettingIsTheScenarioItRan) {
  auto s = ParseLabSetting(Setting().dump(), "r1.json");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->rates, (std::vector<double>{1, 2, 4}));
  const ScenarioSpec spec = SpecOf(*s);
  EXPECT_EQ(spec.db, "/w/planner.db");
  EXPECT_EQ(spec.traces, std::vector<std::string>{"/w/s.trace"});
  EXPECT_EQ(spec.version, 3);
  EXPECT_EQ(spec.router, "affinity");
  EXPECT_EQ(spec.mode, "dp");
  EXPECT_EQ(spec.hosts, 2);
  EXPECT_EQ(spec.ranks_per_host, 2);
  EXPECT_TRUE(spec.node_dedup);
  nlohmann::json v = Setting();
  v["placement"] = "vanilla", v["router_policy"] = "least_loaded", v["netlab_flags"] = "";
  const ScenarioSpec vanilla = SpecOf(*ParseLabSetting(v.dump(), "r1.json"));
  EXPECT_EQ(vanilla.version, 0);
  EXPECT_EQ(vanilla.devices, 4);
  EXPECT_EQ(vanilla.router, "least_loaded");
  EXPECT_FALSE(vanilla.node_dedup);

  const ClusterProfile lab = *LoadClusterProfile("lab");
  EXPECT_DOUBLE_EQ(ProfileFor(lab, *s).inter_bw.value, 400e6 / 8);
  EXPECT_EQ(ProfileFor(lab, *s).ranks_per_node.value, 2);
  v["link_mbit"] = 0;  // Unshaped: the link runs as the loopback.
  EXPECT_EQ(ProfileFor(lab, *ParseLabSetting(v.dump(), "r1.json")).inter_bw.value,
            lab.intra_bw.value);
  // The host's CPU per request: the run's own where it measured it, else the profile's.
  EXPECT_LT(s->host_cpu_per_request_s, 0);
  EXPECT_EQ(ProfileFor(lab, *s).host_cpu_per_request.value, lab.host_cpu_per_request.value);
  v["host_cpu_per_request_s"] = 0.04;
  const ClusterProfile measured = ProfileFor(lab, *ParseLabSetting(v.dump(), "r1.json"));
  EXPECT_DOUBLE_EQ(measured.host_cpu_per_request.value, 0.04);
  EXPECT_NE(measured.host_cpu_per_request.source.find("r1.json"), std::string::npos);
  v["host_cpu_per_request_s"] = -1;
  EXPECT_FALSE(ParseLabSetting(v.dump(), "r1.json").ok());
  // Attention-TP's reduce-scatter and all-gather per layer, where the run has them (0: none).
  EXPECT_EQ(s->srs_ms, 0);
  v["host_cpu_per_request_s"] = 0.04;
  v["srs_ms"] = 1.5, v["sag_ms"] = 1.1;
  const auto tp = ParseLabSetting(v.dump(), "r1.json");
  ASSERT_TRUE(tp.ok()) << tp.status();
  EXPECT_DOUBLE_EQ(tp->srs_ms, 1.5);
  EXPECT_DOUBLE_EQ(tp->sag_ms, 1.1);
  v["sag_ms"] = "x";
  EXPECT_NE(ParseLabSetting(v.dump(), "r1.json").status().message().find("sag_ms"),
            std::string::npos);
}

TEST(LabFitTest, OldOrBrokenSettingsAreRefusedNamingTheField) {
  for (const char* field : {"placement", "work_dir", "rates", "point_s", "dispatch_ms"}) {
    nlohmann::json j = Setting();
    j.erase(field);
    auto s = ParseLabSetting(j.dump(), "r1.json");
    ASSERT_FALSE(s.ok()) << field;
    EXPECT_NE(s.status().message().find(field), std::string::npos) << s.status();
  }
  nlohmann::json j = Setting();
  j["rates"] = "1,x";
  EXPECT_FALSE(ParseLabSetting(j.dump(), "r1.json").ok());
  j = Setting();
  j["ranks_per_host"] = 3;
  EXPECT_FALSE(ParseLabSetting(j.dump(), "r1.json").ok());
  EXPECT_FALSE(ParseLabSetting("[", "r1.json").ok());
}

// A scenario without files: 2 MoE layers, 8 experts, top-2, vanilla on 4 ranks, DP round-robin.
Scenario Small() {
  Scenario s;
  s.trace.header.num_experts = 8;
  s.trace.header.top_k = 2;
  s.trace.header.moe_layers = {0, 1};
  for (int r = 0; r < 16; ++r) {
    std::vector<uint32_t> tokens;
    std::vector<uint16_t> experts;
    for (int t = 0; t < 5 + r % 7; ++t) {
      tokens.push_back(t);
      for (int l = 0; l < 2; ++l) {
        const int first = (r + t + l) % 8;
        experts.push_back(first);
        experts.push_back((first + 1 + r % 7) % 8);
      }
    }
    EXPECT_TRUE(s.trace.AddRequest("r" + std::to_string(r), tokens, experts).ok());
  }
  s.placement = *Placement::Vanilla({0, 1}, 8, 4);
  s.topology = *Topology::Nodes(2, 2);
  s.mode = "dp";
  s.replay = *ReplayDp(s.trace, s.placement, RoundRobinRequests(s.trace, 4));
  s.shape.name = "small";
  s.shape.hidden = 64;
  s.shape.vocab = 32;
  s.shape.moe_layer = {true, true};
  s.shape.attention_params = 4 * 64 * 64;
  s.shape.attention_heads = 4;
  s.shape.qk_head_dim = s.shape.v_head_dim = 16;
  s.shape.kv_values = 128;
  s.shape.num_experts = 8;
  s.shape.top_k = 2;
  s.shape.expert_intermediate = 32;
  return s;
}

TEST(LabFitTest, TheFitFindsTheTimesOfAKnownProfile) {
  const Scenario s = Small();
  // "Measured": what a known profile predicts for two settings (links of 100 and 400 Mbit/s).
  ClusterProfile truth = *LoadClusterProfile("lab");
  truth.collective_latency.value = 1.3e-3;
  truth.flops.value = 5e9;
  truth.step_skew.value = 4e-3;
  std::vector<LabSetting> settings;
  std::vector<Scenario> scenarios;
  for (double mbit : {100.0, 400.0}) {
    nlohmann::json j = Setting();
    j["link_mbit"] = mbit, j["netlab_flags"] = "";
    LabSetting m = *ParseLabSetting(j.dump(), absl::StrCat("truth-", mbit));
    auto r = Predict(s, truth, m);
    ASSERT_TRUE(r.ok()) << r.status();
    m.wait_ms = r->moe.wait * 1e3, m.dispatch_ms = r->moe.dispatch * 1e3;
    m.experts_ms = r->moe.experts * 1e3, m.combine_ms = r->moe.combine * 1e3;
    m.attention_ms = r->attention_s * 1e3, m.moe_layer_ms = r->moe.total() * 1e3;
    settings.push_back(m);
    scenarios.push_back(s);
  }
  const ClusterProfile start = *LoadClusterProfile("lab");  // Each figure off by 1.6× or more.
  auto fitted =
      FitProfile(scenarios, settings, start, {"collective_latency", "flops", "step_skew"});
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  for (const LabSetting& m : settings) {
    const double before = Predict(s, start, m)->moe.total() * 1e3;
    const double after = Predict(s, *fitted, m)->moe.total() * 1e3;
    EXPECT_GT(std::abs(before / m.moe_layer_ms - 1), 0.1) << m.file;
    EXPECT_LT(std::abs(after / m.moe_layer_ms - 1), 0.03) << m.file;
  }
  EXPECT_NE(fitted->collective_latency.source.find("fitted by `simulate fit`"), std::string::npos);
  EXPECT_NE(fitted->collective_latency.source.find("truth-100"), std::string::npos);
  EXPECT_EQ(fitted->message_latency.source, start.message_latency.source);  // Not fitted.
  // No setting measured the host's CPU: the profile's figure stays.
  EXPECT_EQ(fitted->host_cpu_per_request.source, start.host_cpu_per_request.source);
  settings[1].host_cpu_per_request_s = 0.02;  // One did: the profile takes it (the median).
  auto with_host = FitProfile(scenarios, settings, start, {"step_skew"});
  ASSERT_TRUE(with_host.ok()) << with_host.status();
  EXPECT_DOUBLE_EQ(with_host->host_cpu_per_request.value, 0.02);
  EXPECT_NE(with_host->host_cpu_per_request.source.find("truth-400"), std::string::npos);
  EXPECT_FALSE(FitProfile(scenarios, settings, start, {"warp"}).ok());
  EXPECT_FALSE(FitProfile({}, {}, start, {"flops"}).ok());
}

}  // namespace
}  // namespace semmoe::planner::sim
