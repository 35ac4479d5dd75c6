#include "planner/cli/drift.h"

#include <sstream>

#include "common/file.h"
#include "gtest/gtest.h"
#include "planner/cli/commands.h"
#include "planner/cli/testing/topic_trace.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe::planner::cli {
namespace {

using testing::WriteTopicTrace;

TEST(DriftTest, InSampleIsZeroAndDriftedTrafficShows) {
  const std::string db = TempDatabasePath("drift.db");
  const std::string profile = WriteTopicTrace("profile.trace", 1, 0);
  std::ostringstream out;
  auto v = Build({.db = db, .model = "m", .traces = {profile}, .devices = 4}, out);
  ASSERT_TRUE(v.ok()) << v.status();

  // On the traffic it was planned from: no drift, at any layer.
  auto same = DriftReport({.db = db, .version = *v, .live = {profile}});
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ((*same)["mode"], "dp");
  EXPECT_EQ((*same)["live_tokens"], 40 * 12);
  EXPECT_GT((*same)["planned_lar"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ((*same)["lar_drift"].get<double>(), 0.0);
  EXPECT_NEAR((*same)["expert_shift"].get<double>(), 0.0, 1e-6);
  EXPECT_EQ((*same)["unseen_token_share"].get<double>(), 0.0);
  ASSERT_EQ((*same)["layers"].size(), 2u);
  for (const auto& l : (*same)["layers"]) {
    EXPECT_DOUBLE_EQ(l["lar_drift"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(l["live_expert_load"].get<double>(), l["planned_expert_load"].get<double>());
  }

  // The same tokens now use other experts: the version's LAR drops at every layer.
  const std::string drifted = WriteTopicTrace("drifted.trace", 2, 1);
  auto moved = DriftReport({.db = db, .version = *v, .live = {drifted}});
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_LT((*moved)["lar_drift"].get<double>(), -0.2);
  for (const auto& l : (*moved)["layers"]) EXPECT_LT(l["lar_drift"].get<double>(), -0.2) << l;
  std::ostringstream text;
  ASSERT_TRUE(Drift({.db = db, .version = *v, .live = {drifted}}, text).ok());
  EXPECT_NE(text.str().find("planned LAR"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("traffic shift "), std::string::npos) << text.str();

  // Traffic of two of the four topics: half the experts' share moved, at every layer.
  const std::string half = WriteTopicTrace("half.trace", 5, 0, 40, 16, /*topics=*/2);
  auto narrowed = DriftReport({.db = db, .version = *v, .live = {half}});
  ASSERT_TRUE(narrowed.ok()) << narrowed.status();
  EXPECT_NEAR((*narrowed)["expert_shift"].get<double>(), 0.5, 0.05);
  for (const auto& l : (*narrowed)["layers"]) EXPECT_GT(l["expert_shift"].get<double>(), 0.4) << l;

  // Bad input names what is wrong.
  EXPECT_EQ(DriftReport({.db = db, .version = *v}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto empty =
      DriftReport({.db = db, .version = *v, .live = {WriteTopicTrace("e.trace", 3, 0, 0)}});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("no tokens"), std::string::npos);
  auto other = DriftReport(
      {.db = db, .version = *v, .live = {WriteTopicTrace("o.trace", 4, 0, 8, /*experts=*/32)}});
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("32 experts"), std::string::npos)
      << other.status().message();
  EXPECT_FALSE(DriftReport({.db = db, .version = 99, .live = {profile}}).ok());
  EXPECT_FALSE(DriftReport({.db = db, .version = *v, .live = {"/nonexistent.trace"}}).ok());
}

}  // namespace
}  // namespace semmoe::planner::cli
