#include "planner/server/planner_metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/store/autopilot_store.h"
#include "planner/store/experiment_store.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe::planner {
namespace {

using ::testing::HasSubstr;

TEST(PlannerMetricsTest, VersionsExperimentsAndArmFigures) {
  auto store = PlacementStore::Open(TempDatabasePath("metrics.db"));
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->AddModel("m", 1, 4).ok());
  for (int i = 0; i < 3; ++i) {
    PlacementVersion v;
    v.model = "m";
    v.name = "v";
    v.algorithm = i == 2 ? "semantic" : "vanilla";
    v.placement = *Placement::Vanilla({0}, 4, 2);
    ASSERT_TRUE((*store)->Create(v).ok());
  }
  ASSERT_TRUE((*store)->Activate(1).ok());
  ASSERT_TRUE((*store)->Activate(2).ok());
  ExperimentStore experiments(**store);
  auto id = experiments.Create("m", "ab", {{"A", 2, 90}, {"B", 3, 10}});
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(experiments.Start(*id).ok());
  ASSERT_TRUE(experiments
                  .RecordArmMetrics(*id, "B",
                                    R"({"completed": 12, "goodput_rps": 2.5, "lar": 0.4,
                                        "ttft_ms": {"p50": 20, "p99": 80}, "tables_error": "",
                                        "moe_layer_ms": 2.5})")
                  .ok());
  ASSERT_TRUE(experiments.RecordArmMetrics(*id, "A", R"({"moe_layer_ms": 2})").ok());
  AutopilotStore decisions(**store);
  ASSERT_TRUE(decisions.Record({.model = "m", .action = "steady"}).ok());
  ASSERT_TRUE(decisions.Record({.model = "m", .action = "steady"}).ok());
  ASSERT_TRUE(decisions.Record({.model = "m", .action = "rollout", .candidate_version = 2}).ok());
  ASSERT_TRUE((*store)
                  ->SetPrediction(2, "h200 2x8",
                                  R"({"predicted_vs_vanilla": 1.25,
                                      "predicted_max_rate_vs_vanilla": 0.5})")
                  .ok());
  auto text = PlannerMetricsText(**store);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("semmoe_planner_active_version{model=\"m\"} 2"));
  EXPECT_THAT(*text, HasSubstr("semmoe_planner_active_predicted_vs_vanilla{model=\"m\","
                               "cluster=\"h200 2x8\"} 1.25"));
  EXPECT_THAT(*text, HasSubstr("semmoe_planner_active_predicted_max_rate_vs_vanilla{model=\"m\","
                               "cluster=\"h200 2x8\"} 0.5"));
  EXPECT_THAT(*text, HasSubstr("semmoe_planner_autopilot_decisions_total{model=\"m\","
                               "action=\"steady\"} 2"));
  EXPECT_THAT(*text, HasSubstr("semmoe_planner_autopilot_last_decision{model=\"m\","
                               "action=\"rollout\"} 1"));
  EXPECT_THAT(*text, HasSubstr("semmoe_planner_autopilot_last_decision_timestamp_seconds"));
  EXPECT_THAT(*text,
              HasSubstr("semmoe_planner_placement_versions{model=\"m\",status=\"draft\"} 1"));
  EXPECT_THAT(*text,
              HasSubstr("semmoe_planner_placement_versions{model=\"m\",status=\"retired\"} 1"));
  EXPECT_THAT(*text,
              HasSubstr("semmoe_planner_experiment_running{model=\"m\",experiment=\"1\"} 1"));
  EXPECT_THAT(*text, HasSubstr("semmoe_planner_experiment_arm_version{model=\"m\",experiment=\"1\","
                               "arm=\"B\"} 3"));
  EXPECT_THAT(*text, HasSubstr("semmoe_planner_experiment_arm_goodput_requests_per_second{model="
                               "\"m\",experiment=\"1\",arm=\"B\"} 2.5"));
  EXPECT_THAT(*text, HasSubstr("semmoe_planner_experiment_arm_ttft_seconds{model=\"m\","
                               "experiment=\"1\",arm=\"B\",quantile=\"0.99\"} 0.08"));
  EXPECT_THAT(*text, HasSubstr("semmoe_planner_experiment_arm_routed_as_planned{model=\"m\","
                               "experiment=\"1\",arm=\"B\"} 1"));
  // B (semantic) measured against A (vanilla): the MoE layer, and its ratio to A's.
  EXPECT_THAT(*text, HasSubstr("semmoe_planner_experiment_arm_moe_layer_seconds{model=\"m\","
                               "experiment=\"1\",arm=\"B\"} 0.0025"));
  EXPECT_THAT(*text, HasSubstr("semmoe_planner_experiment_arm_measured_vs_vanilla{model=\"m\","
                               "experiment=\"1\",arm=\"B\"} 1.25"));
  EXPECT_EQ(text->find("semmoe_planner_experiment_arm_measured_vs_vanilla{model=\"m\","
                       "experiment=\"1\",arm=\"A\"}"),
            std::string::npos);  // The vanilla arm is the baseline.
  // Arm A has recorded only its MoE layer: no other figures.
  EXPECT_EQ(text->find("arm=\"A\"} 0.4"), std::string::npos);
}

}  // namespace
}  // namespace semmoe::planner
