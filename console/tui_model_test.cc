#include "console/tui_model.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace semmoe::console {
namespace {

planner::rpc::Experiment TwoArms(const std::string& a, const std::string& b) {
  planner::rpc::Experiment e;
  e.set_id(1);
  auto* x = e.add_arms();
  x->set_name("A");
  x->set_latest_metrics_json(a);
  auto* y = e.add_arms();
  y->set_name("B");
  y->set_latest_metrics_json(b);
  return e;
}

TEST(TuiModelTest, VerdictIsATwoProportionTest) {
  // 1000 requests each: 90% vs 97% within the SLO is significant; 90% vs 91% is not.
  EXPECT_NE(Verdict(TwoArms(R"({"completed": 1000, "throughput_rps": 10, "goodput_rps": 9})",
                            R"({"completed": 1000, "throughput_rps": 10, "goodput_rps": 9.7})"))
                .find("B is better"),
            std::string::npos);
  EXPECT_NE(Verdict(TwoArms(R"({"completed": 1000, "throughput_rps": 10, "goodput_rps": 9})",
                            R"({"completed": 1000, "throughput_rps": 10, "goodput_rps": 9.1})"))
                .find("no significant difference"),
            std::string::npos);
  EXPECT_EQ(Verdict(TwoArms("", R"({"completed": 5})")), "");
}

TEST(TuiModelTest, AnArmNotRoutedAsPlannedHasNoVerdict) {
  const auto e =
      TwoArms(R"({"completed": 1000, "throughput_rps": 10, "goodput_rps": 9, "tables_error": ""})",
              R"({"completed": 1000, "throughput_rps": 10, "goodput_rps": 9.7,
                  "tables_error": "version 2's tables: too big"})");
  EXPECT_EQ(Verdict(e),
            "no verdict: arm B was not routed as planned (version 2's tables: too big)");
  EXPECT_EQ(NotRoutedAsPlanned(e.arms(0)), "");
}

TEST(TuiModelTest, AnArmMeasuredSlowerThanTheVanillaArmIsSaid) {
  auto e = TwoArms(R"({"moe_layer_ms": 2.0})", R"({"moe_layer_ms": 2.2})");
  e.set_vanilla_arm("A");
  EXPECT_TRUE(MeasuredSlowerLines(e).empty());  // The planner has not compared them.
  e.mutable_arms(1)->set_moe_vs_vanilla_arm(1.1);
  ASSERT_EQ(MeasuredSlowerLines(e).size(), 1u);
  EXPECT_EQ(MeasuredSlowerLines(e)[0],
            "!! arm B's MoE layer was measured 1.100x the vanilla arm A's: promote refuses it "
            "without --force");
  e.mutable_arms(1)->set_moe_vs_vanilla_arm(1.01);  // Within 2%.
  EXPECT_TRUE(MeasuredSlowerLines(e).empty());
  // The experiments pane says it too.
  e.mutable_arms(1)->set_moe_vs_vanilla_arm(1.2);
  Snapshot s;
  s.experiments.push_back(e);
  const auto lines = ExperimentLines(s, 0, 200);
  EXPECT_NE(
      std::find_if(lines.begin(), lines.end(),
                   [](const std::string& l) { return l.find("1.200x") != std::string::npos; }),
      lines.end());
}

TEST(TuiModelTest, BannersNameUnreachableServicesAndTablesErrors) {
  Snapshot s;
  s.planner_ok = true;
  s.router_ok = true;
  EXPECT_TRUE(Banners(s, "p:1", "r:2").empty());
  s.router.set_tables_error("arm B: version 2's tables: not found; placing by load alone");
  ASSERT_EQ(Banners(s, "p:1", "r:2").size(), 1u);
  EXPECT_EQ(Banners(s, "p:1", "r:2")[0],
            "!! router tables: arm B: version 2's tables: not found; placing by load alone");
  s.planner_ok = false;
  s.planner_error = "connection refused";
  EXPECT_EQ(Banners(s, "p:1", "r:2")[0],
            "!! planner p:1 unreachable - retrying every second (connection refused)");
}

TEST(TuiModelTest, DownRanksGetABannerWithTheirReason) {
  Snapshot s;
  s.planner_ok = s.router_ok = true;
  router::rpc::RankStats* up = s.router.add_ranks();
  up->set_rank(0);
  up->set_usable(true);
  router::rpc::RankStats* down = s.router.add_ranks();
  down->set_rank(1);
  down->set_arm("B");
  down->set_address("h:7");
  down->set_down_reason("no answer to stats within 1 s (stalled?)");
  down->set_down_for_s(3.25);
  const std::vector<std::string> b = Banners(s, "p:1", "r:2");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0], "!! arm B rank 1 (h:7) down for 3.2 s: no answer to stats within 1 s (stalled?)");
}

TEST(TuiModelTest, SparklineAndBar) {
  EXPECT_EQ(Sparkline({0, 1, 2}), "▁▅█");
  EXPECT_EQ(Sparkline({}), "");
  EXPECT_EQ(Sparkline({0, 1, 2}, false), " =#");
  EXPECT_EQ(Bar(0.5, 4), "##..");
  EXPECT_EQ(Bar(2, 3), "###");
}

TEST(TuiModelTest, ClusterShowsEachRanksRolloutAndRefusals) {
  Snapshot s;
  s.router_ok = s.planner_ok = true;
  router::rpc::RankStats* r0 = s.router.add_ranks();
  r0->set_address("h:1");
  r0->set_placement_version(2);
  r0->mutable_rollout()->set_target_version(3);
  r0->mutable_rollout()->set_experts_loaded(4);
  r0->mutable_rollout()->set_experts_to_load(10);
  r0->mutable_rollout()->set_epoch(1);
  EXPECT_EQ(PlacementCell(*r0), "v2->v3 4/10 e1");
  router::rpc::RankStats* r1 = s.router.add_ranks();
  r1->set_rank(1);
  r1->set_placement_version(2);
  r1->mutable_rollout()->set_target_version(3);
  r1->mutable_rollout()->set_staged(true);
  EXPECT_EQ(PlacementCell(*r1), "v2->v3 staged");
  r1->clear_rollout();
  EXPECT_EQ(PlacementCell(*r1), "v2");
  router::rpc::ArmStats* arm = s.router.add_arms();
  arm->set_load_window_s(45);
  router::rpc::LayerLoad* load = arm->add_layer_loads();
  load->set_layer(5);
  load->set_imbalance(0.25);
  load->set_busiest_rank(1);
  for (int e : {7, 2, 40, 9}) load->add_hot_experts()->set_expert(e);
  s.topology = "2x2 (node dedup)";
  s.layer_node_bytes.push_back({.layer = 5, .cross = 1 << 20, .intra = 3 << 20});
  bool shown = false, load_shown = false, window_shown = false, nodes_shown = false,
       node_header = false;
  for (const std::string& line : ClusterLines(s, {}, 200)) {
    node_header |=
        line.find("across nodes | inside nodes (topology 2x2 (node dedup)") != std::string::npos;
    nodes_shown |= line.find("layer 5") != std::string::npos &&
                   line.find("      1.0 |       3.0") != std::string::npos;
    shown |= line.find("v2->v3 4/10 e1") != std::string::npos;
    window_shown |= line.find("over the ranks, last 45 s") != std::string::npos;
    load_shown |= line.find("layer 5") != std::string::npos &&
                  line.find("0.250  (busiest: rank 1; hottest: e7 e2 e40)") != std::string::npos;
  }
  EXPECT_TRUE(shown);
  EXPECT_TRUE(load_shown);
  EXPECT_TRUE(window_shown);
  EXPECT_TRUE(node_header);
  EXPECT_TRUE(nodes_shown);
  EXPECT_TRUE(Banners(s, "p", "r").empty());
  r0->mutable_rollout()->set_error("version 3 refused: rank 1: no disk");
  ASSERT_EQ(Banners(s, "p", "r").size(), 1u);
  EXPECT_EQ(Banners(s, "p", "r")[0], "!! rollout: version 3 refused: rank 1: no disk");
}

TEST(TuiModelTest, PanesMarkTheSelectionAndShowBanners) {
  Snapshot s;
  s.versions.resize(2);
  s.versions[0].set_version(2);
  s.versions[0].set_status("active");
  s.versions[1].set_version(1);
  const auto lines = PlacementLines(s, 1, 100);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2][0], '>');
  EXPECT_EQ(lines[1][0], ' ');
  EXPECT_EQ(ExperimentLines(s, 0, 100).back(), "  (no experiments)");
  EXPECT_FALSE(ClusterLines(s, {1, 2}, 100).empty());
  // The autopilot's latest decision and rollouts under the versions; an error is a banner.
  s.autopilot.resize(2);
  s.autopilot[0].set_action("steady");
  s.autopilot[0].set_served_version(2);
  s.autopilot[0].set_reason("live LAR 0.21 against 0.22 planned");
  s.autopilot[1].set_id(4);
  s.autopilot[1].set_action("rollout");
  s.autopilot[1].set_served_version(1);
  s.autopilot[1].set_candidate_version(2);
  s.autopilot[1].set_moved_experts(6);
  const auto with = PlacementLines(s, 1, 100);
  ASSERT_EQ(with.size(), 6u);
  EXPECT_EQ(with[4], "autopilot: steady (serving v2): live LAR 0.21 against 0.22 planned");
  EXPECT_EQ(with[5], "  #4 rollout v1 -> v2, 6 experts moved");
  s.planner_ok = s.router_ok = true;
  EXPECT_TRUE(Banners(s, "p", "r").empty());
  s.autopilot[0].set_action("error");
  s.autopilot[0].set_reason("cannot open trace x");
  ASSERT_EQ(Banners(s, "p", "r").size(), 1u);
  EXPECT_EQ(Banners(s, "p", "r")[0], "!! autopilot: cannot open trace x");
}

}  // namespace
}  // namespace semmoe::console
