#include "planner/store/autopilot_store.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe::planner {
namespace {

class AutopilotStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = PlacementStore::Open(TempDatabasePath("autopilot.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    placements_ = std::move(*store);
    ASSERT_TRUE(placements_->AddModel("m", 1, 4).ok());
    decisions_ = std::make_unique<AutopilotStore>(*placements_);
  }
  std::unique_ptr<PlacementStore> placements_;
  std::unique_ptr<AutopilotStore> decisions_;
};

TEST_F(AutopilotStoreTest, DecisionsAreAppendedAndReadNewestFirst) {
  ASSERT_TRUE(decisions_->Record({.model = "m", .action = "steady", .reason = "no drift"}).ok());
  auto rollout = decisions_->Record({.model = "m",
                                     .action = "rollout",
                                     .reason = "LAR 0.15 -> 0.21 on the window",
                                     .served_version = 1,
                                     .candidate_version = 2,
                                     .moved_experts = 12,
                                     .figures_json = R"({"live_lar": 0.15})"});
  ASSERT_TRUE(rollout.ok()) << rollout.status();
  auto latest = decisions_->Latest("m", 10);
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_EQ(latest->size(), 2u);
  EXPECT_EQ((*latest)[0].id, *rollout);
  EXPECT_EQ((*latest)[0].action, "rollout");
  EXPECT_EQ((*latest)[0].candidate_version, 2);
  EXPECT_EQ((*latest)[0].moved_experts, 12);
  EXPECT_EQ((*latest)[0].figures_json, R"({"live_lar": 0.15})");
  EXPECT_EQ((*latest)[1].action, "steady");
  EXPECT_EQ((*latest)[1].moved_experts, -1);
  EXPECT_EQ(decisions_->Latest("m", 1)->size(), 1u);
  auto counts = decisions_->Counts("m");
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(*counts, (std::vector<std::pair<std::string, int64_t>>{{"rollout", 1}, {"steady", 1}}));
}

TEST_F(AutopilotStoreTest, BadDecisionsAreRefusedAndRowsCannotChange) {
  EXPECT_EQ(decisions_->Record({.model = "nope", .action = "steady"}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(decisions_->Record({.model = "m", .action = "deploy"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      decisions_->Record({.model = "m", .action = "wait", .figures_json = "[1]"}).status().code(),
      absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(decisions_->Record({.model = "m", .action = "wait"}).ok());
  Database& db = placements_->database();
  auto update = db.Prepare("UPDATE autopilot_decisions SET action = 'rollout'");
  ASSERT_TRUE(update.ok());
  EXPECT_FALSE(update->Run().ok());
  auto remove = db.Prepare("DELETE FROM autopilot_decisions");
  ASSERT_TRUE(remove.ok());
  EXPECT_FALSE(remove->Run().ok());
  EXPECT_EQ(decisions_->Latest("m", 5)->size(), 1u);
}

// A loop waiting at its period: identical waits, steadies and errors are counted on one row (the
// history stays readable and the table small); any difference, or an event in between, is a new
// row; rollouts are never merged. Counts include the repeats.
TEST_F(AutopilotStoreTest, IdenticalConsecutiveNonEventsAreCountedNotAppended) {
  const AutopilotDecision wait = {.model = "m", .action = "wait", .reason = "no traces yet"};
  absl::StatusOr<int64_t> first = decisions_->Record(wait);
  ASSERT_TRUE(first.ok()) << first.status();
  for (int i = 0; i < 999; ++i) ASSERT_EQ(decisions_->Record(wait).value(), *first);
  auto latest = decisions_->Latest("m", 10);
  ASSERT_EQ(latest->size(), 1u);
  EXPECT_EQ((*latest)[0].repeats, 1000);
  EXPECT_GE((*latest)[0].last_at, (*latest)[0].at);

  AutopilotDecision other_reason = wait;
  other_reason.reason = "the window holds 3 tokens";
  EXPECT_NE(decisions_->Record(other_reason).value(), *first);
  AutopilotDecision other_figures = other_reason;
  other_figures.figures_json = R"({"window_tokens": 3})";
  const int64_t figures_row = decisions_->Record(other_figures).value();
  EXPECT_EQ(decisions_->Record(other_figures).value(), figures_row);
  const AutopilotDecision rollout = {.model = "m",
                                     .action = "rollout",
                                     .reason = "gain",
                                     .served_version = 1,
                                     .candidate_version = 2,
                                     .moved_experts = 3};
  const int64_t r1 = decisions_->Record(rollout).value();
  EXPECT_NE(decisions_->Record(rollout).value(), r1);                 // Events are each a row.
  EXPECT_NE(decisions_->Record(other_figures).value(), figures_row);  // Not consecutive.

  latest = decisions_->Latest("m", 10);
  ASSERT_EQ(latest->size(), 6u);
  EXPECT_EQ((*latest)[3].repeats, 2);
  auto counts = decisions_->Counts("m");
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(*counts,
            (std::vector<std::pair<std::string, int64_t>>{{"rollout", 2}, {"wait", 1004}}));

  // The count may only grow; the rest of the row stays a log.
  Database& db = placements_->database();
  for (const char* sql :
       {"UPDATE autopilot_decisions SET repeats = 1", "UPDATE autopilot_decisions SET last_at = 0",
        "UPDATE autopilot_decisions SET reason = 'x'"}) {
    auto update = db.Prepare(sql);
    ASSERT_TRUE(update.ok());
    EXPECT_FALSE(update->Run().ok()) << sql;
  }
}

}  // namespace
}  // namespace semmoe::planner
