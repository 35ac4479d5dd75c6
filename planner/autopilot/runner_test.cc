#include "planner/autopilot/runner.h"

#include <sstream>

#include "gtest/gtest.h"
#include "planner/cli/commands.h"
#include "planner/cli/testing/topic_trace.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe::planner {
namespace {

TEST(AutopilotRunnerTest, TicksUntilStoppedAndKeepsTheLatestDecision) {
  const std::string db = TempDatabasePath("runner.db");
  std::ostringstream out;
  auto v1 = cli::Build(
      {.db = db, .model = "m", .traces = {testing::WriteTopicTrace("p.trace", 1)}, .devices = 4},
      out);
  ASSERT_TRUE(v1.ok()) << v1.status();
  ASSERT_TRUE(cli::Activate(db, *v1, out).ok());
  const std::string live = testing::WriteTopicTrace("live.trace", 2);
  // Periods below the floor (1 ns spun a core) and NaN thresholds are refused, naming the flag.
  for (absl::Duration bad :
       {absl::ZeroDuration(), absl::Nanoseconds(1), absl::Milliseconds(99), absl::Hours(25)}) {
    absl::StatusOr<std::unique_ptr<AutopilotRunner>> r =
        AutopilotRunner::Start({.db = db, .model = "m", .traces = {live}}, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--autopilot_period"), std::string::npos) << r.status();
  }
  auto runner = AutopilotRunner::Start(
      {.db = db, .model = "m", .traces = {live}, .min_window_tokens = 100}, kMinAutopilotPeriod);
  ASSERT_TRUE(runner.ok()) << runner.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  int64_t ticks = 0, rows = 0;  // Identical steadies are counted on one row.
  while (absl::Now() < deadline && ticks < 3) {
    absl::SleepFor(absl::Milliseconds(20));
    auto store = PlacementStore::Open(db);
    ASSERT_TRUE(store.ok());
    const std::vector<AutopilotDecision> latest = *AutopilotStore(**store).Latest("m", 10);
    ticks = 0;
    for (const AutopilotDecision& d : latest) ticks += d.repeats;
    rows = static_cast<int64_t>(latest.size());
  }
  EXPECT_GE(ticks, 3) << "the loop did not keep ticking";
  EXPECT_LT(rows, ticks) << "the same steady decision was appended again";
  (*runner)->Stop();
  auto latest = (*runner)->Latest();
  ASSERT_TRUE(latest.has_value());
  ASSERT_TRUE(latest->ok()) << latest->status();
  EXPECT_EQ((*latest)->action, "steady") << (*latest)->reason;
  (*runner)->Stop();  // Idempotent.
}

}  // namespace
}  // namespace semmoe::planner
