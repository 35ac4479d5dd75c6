#include "planner/store/experiment_store.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe::planner {
namespace {

using ::testing::HasSubstr;

class ExperimentStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = PlacementStore::Open(TempDatabasePath("experiments.db"));
    ASSERT_TRUE(store.ok());
    placements_ = std::move(*store);
    ASSERT_TRUE(placements_->AddModel("m", 1, 4).ok());
    ASSERT_TRUE(placements_->AddModel("other", 1, 4).ok());
    for (const char* model : {"m", "m", "other"}) {
      PlacementVersion v;
      v.model = model;
      v.name = "v";
      v.algorithm = "vanilla";
      v.placement = *Placement::Vanilla({0}, 4, 2);
      ASSERT_TRUE(placements_->Create(v).ok());
    }
    experiments_ = std::make_unique<ExperimentStore>(*placements_);
  }
  std::unique_ptr<PlacementStore> placements_;
  std::unique_ptr<ExperimentStore> experiments_;
};

TEST_F(ExperimentStoreTest, LifecycleAndMetrics) {
  auto id = experiments_->Create("m", "semantic vs vanilla", {{"a", 1, 90}, {"b", 2, 10}});
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(experiments_->RecordArmMetrics(*id, "a", "{}").code(),
            absl::StatusCode::kFailedPrecondition);  // Not running yet.
  ASSERT_TRUE(experiments_->Start(*id).ok());
  ASSERT_TRUE(experiments_->RecordArmMetrics(*id, "a", R"({"lar": 0.2})").ok());
  ASSERT_TRUE(experiments_->RecordArmMetrics(*id, "a", R"({"lar": 0.3})").ok());
  EXPECT_EQ(experiments_->RecordArmMetrics(*id, "c", "{}").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(experiments_->RecordArmMetrics(*id, "a", "[1]").code(),
            absl::StatusCode::kInvalidArgument);
  auto e = experiments_->Get(*id);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->status, "running");
  ASSERT_EQ(e->arms.size(), 2u);
  EXPECT_EQ(e->arms[0].share_percent, 90);
  EXPECT_EQ(e->arms[0].latest_metrics_json, R"({"lar": 0.3})");
  EXPECT_EQ(e->arms[1].latest_metrics_json, "");
  // One running experiment per model.
  auto second = experiments_->Create("m", "again", {{"x", 1, 50}, {"y", 2, 50}});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(experiments_->Start(*second).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(experiments_->Stop(*id).ok());
  EXPECT_TRUE(experiments_->Start(*second).ok());
  EXPECT_EQ(experiments_->Stop(*id).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(experiments_->List("m")->size(), 2u);
  EXPECT_FALSE(
      placements_->database().Execute("UPDATE experiment_arms SET share_percent = 5").ok());
}

TEST_F(ExperimentStoreTest, PromoteActivatesTheArmAndStops) {
  auto id = experiments_->Create("m", "promote", {{"a", 1, 50}, {"b", 2, 50}});
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(experiments_->Promote(*id, "b").status().code(),
            absl::StatusCode::kFailedPrecondition);  // A draft.
  ASSERT_TRUE(experiments_->Start(*id).ok());
  EXPECT_EQ(experiments_->Promote(*id, "c").status().code(), absl::StatusCode::kNotFound);
  auto version = experiments_->Promote(*id, "b");
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, 2);
  EXPECT_EQ(placements_->Active("m")->value().version, 2);
  EXPECT_EQ(experiments_->Get(*id)->status, "stopped");
  // A stopped experiment can still be promoted (the decision may come later).
  ASSERT_TRUE(experiments_->Promote(*id, "a").ok());
  EXPECT_EQ(placements_->Active("m")->value().version, 1);
}

TEST_F(ExperimentStoreTest, AnArmNotRoutedAsPlannedIsNotPromoted) {
  auto id = experiments_->Create("m", "blind", {{"a", 1, 50}, {"b", 2, 50}});
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(experiments_->Start(*id).ok());
  ASSERT_TRUE(
      experiments_->RecordArmMetrics(*id, "a", R"({"completed": 5, "tables_error": ""})").ok());
  ASSERT_TRUE(experiments_
                  ->RecordArmMetrics(
                      *id, "b", R"({"completed": 5, "tables_error": "version 2's tables: gone"})")
                  .ok());
  EXPECT_EQ(NotRoutedAsPlanned(experiments_->Get(*id)->arms[1]), "version 2's tables: gone");
  EXPECT_EQ(NotRoutedAsPlanned(experiments_->Get(*id)->arms[0]), "");
  auto refused = experiments_->Promote(*id, "b");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("arm b was not routed as planned"));
  EXPECT_FALSE(placements_->Active("m")->has_value());
  EXPECT_TRUE(experiments_->Promote(*id, "a").ok());
}

TEST_F(ExperimentStoreTest, AnArmMeasuredSlowerThanTheVanillaArmIsNotPromoted) {
  PlacementVersion semantic;
  semantic.model = "m";
  semantic.name = "s";
  semantic.algorithm = "semantic";
  semantic.placement = *Placement::Vanilla({0}, 4, 2);
  auto s = placements_->Create(semantic);
  ASSERT_TRUE(s.ok()) << s.status();
  auto id = experiments_->Create("m", "ab", {{"a", 1, 50}, {"b", *s, 50}});
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(experiments_->Start(*id).ok());
  // Nothing measured yet: nothing to compare, nothing refused on that ground.
  EXPECT_TRUE(experiments_->MeasuredVsVanilla(*experiments_->Get(*id))->moe_ratio.empty());
  ASSERT_TRUE(experiments_->RecordArmMetrics(*id, "a", R"({"moe_layer_ms": 2.0})").ok());
  ASSERT_TRUE(experiments_->RecordArmMetrics(*id, "b", R"({"moe_layer_ms": 2.2})").ok());
  auto measured = experiments_->MeasuredVsVanilla(*experiments_->Get(*id));
  ASSERT_TRUE(measured.ok()) << measured.status();
  EXPECT_EQ(measured->vanilla_arm, "a");
  ASSERT_EQ(measured->moe_ratio.count("b"), 1u);
  EXPECT_DOUBLE_EQ(measured->moe_ratio.at("b"), 1.1);
  EXPECT_EQ(measured->moe_ratio.count("a"), 0u);  // The vanilla arm is the baseline.
  auto refused = experiments_->Promote(*id, "b");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("arm b's MoE layer was measured 1.100x the vanilla arm a's"));
  EXPECT_FALSE(placements_->Active("m")->has_value());
  EXPECT_TRUE(experiments_->Promote(*id, "a").ok());  // The vanilla arm itself.
  // Within 2%: promoted; and --force overrides a measured loss.
  auto again = experiments_->Create("m", "ab2", {{"a", 1, 50}, {"b", *s, 50}});
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(experiments_->Start(*again).ok());
  ASSERT_TRUE(experiments_->RecordArmMetrics(*again, "a", R"({"moe_layer_ms": 2.0})").ok());
  ASSERT_TRUE(experiments_->RecordArmMetrics(*again, "b", R"({"moe_layer_ms": 2.03})").ok());
  EXPECT_TRUE(experiments_->Promote(*again, "b").ok());
  auto forced = experiments_->Create("m", "ab3", {{"a", 1, 50}, {"b", *s, 50}});
  ASSERT_TRUE(forced.ok());
  ASSERT_TRUE(experiments_->Start(*forced).ok());
  ASSERT_TRUE(experiments_->RecordArmMetrics(*forced, "a", R"({"moe_layer_ms": 2.0})").ok());
  ASSERT_TRUE(experiments_->RecordArmMetrics(*forced, "b", R"({"moe_layer_ms": 3})").ok());
  EXPECT_FALSE(experiments_->Promote(*forced, "b").ok());
  EXPECT_TRUE(experiments_->Promote(*forced, "b", /*force=*/true).ok());
  // Two vanilla arms: no baseline to compare with.
  auto plain = experiments_->Create("m", "plain", {{"x", 1, 50}, {"y", 2, 50}});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(experiments_->MeasuredVsVanilla(*experiments_->Get(*plain))->vanilla_arm, "");
}

TEST_F(ExperimentStoreTest, BadExperimentsAreClearErrors) {
  auto message = [&](std::vector<ExperimentArm> arms) {
    return std::string(experiments_->Create("m", "e", arms).status().message());
  };
  EXPECT_THAT(message({{"a", 1, 100}}), HasSubstr("at least 2 arms"));
  EXPECT_THAT(message({{"a", 1, 50}, {"a", 2, 50}}), HasSubstr("distinct"));
  EXPECT_THAT(message({{"a", 1, 60}, {"b", 2, 50}}), HasSubstr("sum to 110"));
  EXPECT_THAT(message({{"a", 1, 0}, {"b", 2, 100}}), HasSubstr("share 0"));
  EXPECT_THAT(message({{"a", 1, 50}, {"b", 9, 50}}), HasSubstr("no placement version 9"));
  EXPECT_THAT(message({{"a", 1, 50}, {"b", 3, 50}}), HasSubstr("is not a 'm' placement"));
  EXPECT_EQ(experiments_->Create("nope", "e", {{"a", 1, 50}, {"b", 2, 50}}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(experiments_->Start(42).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(experiments_->List("m")->empty());
}

}  // namespace
}  // namespace semmoe::planner
