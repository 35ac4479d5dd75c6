#include "planner/autopilot/serving_board.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

ServingState Group(const std::string& model, const std::string& group, absl::Time at) {
  return {.model = model,
          .group = group,
          .ranks = 2,
          .serving_version = 3,
          .completed = 10,
          .failed = 1,
          .local_activations = 30,
          .remote_activations = 10,
          .at = at};
}

TEST(ServingBoardTest, KeepsTheLatestReportPerGroupAndForgetsStaleOnes) {
  ServingBoard board;
  ASSERT_TRUE(board.Report(Group("m", "a:1", kNow - absl::Seconds(5))).ok());
  ServingState newer = Group("m", "a:1", kNow);
  newer.serving_version = 4;
  newer.refused_version = 5;
  newer.refusal = "rank 1: no checkpoint";
  ASSERT_TRUE(board.Report(newer).ok());
  ASSERT_TRUE(board.Report(Group("m", "b:1", kNow - absl::Minutes(2))).ok());  // Stale.
  ASSERT_TRUE(board.Report(Group("other", "c:1", kNow)).ok());
  ASSERT_TRUE(board.Report(Group("mm", "d:1", kNow)).ok());  // A name that extends "m".

  const std::vector<ServingState> m = board.Of("m", kNow, absl::Seconds(30));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].group, "a:1");
  EXPECT_EQ(m[0].serving_version, 4);
  EXPECT_EQ(m[0].refused_version, 5);
  EXPECT_EQ(m[0].refusal, "rank 1: no checkpoint");
  EXPECT_EQ(board.Of("m", kNow, absl::Minutes(5)).size(), 2u);
  EXPECT_TRUE(board.Of("nope", kNow, absl::Minutes(5)).empty());
}

TEST(ServingBoardTest, RefusesReportsWithoutNamesOrWithNegativeCounters) {
  ServingBoard board;
  EXPECT_FALSE(board.Report(Group("", "a:1", kNow)).ok());
  EXPECT_FALSE(board.Report(Group("m", "", kNow)).ok());
  ServingState bad = Group("m", "a:1", kNow);
  bad.failed = -1;
  const absl::Status s = board.Report(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("a:1"), std::string::npos) << s;
  EXPECT_TRUE(board.Of("m", kNow, absl::Minutes(5)).empty());
  // Seconds that are not a number of seconds (a forged report).
  for (double seconds : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    ServingState odd = Group("m", "a:1", kNow);
    odd.request_seconds = seconds;
    EXPECT_EQ(board.Report(odd).code(), absl::StatusCode::kInvalidArgument) << seconds;
  }
  EXPECT_TRUE(board.Of("m", kNow, absl::Minutes(5)).empty());
}

TEST(ServingBoardTest, TotalsSumGroupsAndTheirDifferenceIsWhatServedBetween) {
  const ServingTotals a = Sum({Group("m", "a:1", kNow), Group("m", "b:1", kNow)});
  EXPECT_EQ(a.completed, 20);
  EXPECT_EQ(a.failed, 2);
  EXPECT_EQ(a.activations(), 80);
  EXPECT_DOUBLE_EQ(a.lar(), 0.75);
  EXPECT_DOUBLE_EQ(a.failed_share(), 2.0 / 22.0);
  const ServingTotals later{.completed = 30, .failed = 2, .local = 80, .remote = 20};
  const ServingTotals between = later - a;
  EXPECT_EQ(between.completed, 10);
  EXPECT_EQ(between.failed, 0);
  EXPECT_DOUBLE_EQ(between.lar(), 1.0);
  EXPECT_DOUBLE_EQ(ServingTotals{}.lar(), 0.0);
  const ServingTotals timed{.completed = 4, .output_tokens = 40, .request_seconds = 2.0};
  EXPECT_DOUBLE_EQ(timed.seconds_per_token(), 0.05);
  EXPECT_DOUBLE_EQ((timed - timed).seconds_per_token(), 0.0);  // No tokens between.
  EXPECT_DOUBLE_EQ(ServingTotals{}.failed_share(), 0.0);
}

}  // namespace
}  // namespace semmoe::planner
