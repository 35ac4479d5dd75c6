// PlannerWatch against a real planner server (loopback gRPC, SQLite in the test's temp dir).
#include "router/tables/planner_watch.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"
#include "planner/affinity/prompt_score_table.h"
#include "planner/affinity/testing/real_scale.h"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/server/serve.h"
#include "planner/store/placement_store.h"
#include "planner/store/testing/temp_database_path.h"
#include "router/tables/testing/tables_testing.h"

namespace semmoe::router {
namespace {

using testing::Eventually;

std::string Tables() { return testing::TinyAffinityTables(); }

TEST(PlannerWatchTest, FollowsTheActiveVersion) {
  const std::string db = planner::TempDatabasePath("watch.db");
  auto store = planner::PlacementStore::Open(db);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->AddModel("m", 2, 4).ok());
  planner::PlacementVersion v;
  v.model = "m";
  v.name = "with-tables";
  v.algorithm = "vanilla";
  v.placement = *planner::Placement::Vanilla({0, 1}, 4, 2);
  auto v1 = (*store)->Create(v, Tables());
  v.name = "without-tables";
  auto v2 = (*store)->Create(v, "");
  v.name = "four-devices";
  v.placement = *planner::Placement::Vanilla({0, 1}, 4, 4);
  auto v3 = (*store)->Create(v, Tables());
  ASSERT_TRUE(v1.ok() && v2.ok() && v3.ok());
  auto server = planner::PlannerServer::Start(
      {.db = db, .service = {.poll_interval = absl::Milliseconds(20)}});
  ASSERT_TRUE(server.ok()) << server.status();

  TablesHolder holder;
  PlannerWatch watch(absl::StrCat("127.0.0.1:", (*server)->port()), "m", 2, 16, holder);
  ASSERT_TRUE(Eventually([&] { return watch.attempts() >= 1; }));
  EXPECT_EQ(holder.Get(), nullptr);  // Nothing active yet, and the stats say so.
  EXPECT_NE(holder.error().find("waiting for the planner's active version"), std::string::npos)
      << holder.error();

  ASSERT_TRUE((*store)->Activate(*v1).ok());
  ASSERT_TRUE(Eventually([&] { return watch.version() == *v1; }));
  ASSERT_NE(holder.Get(), nullptr);
  EXPECT_EQ(holder.Get()->version, *v1);
  EXPECT_EQ(holder.error(), "");
  const std::shared_ptr<const RouterTables> kept = holder.Get();

  ASSERT_TRUE((*store)->Activate(*v2).ok());
  ASSERT_TRUE(Eventually([&] { return holder.Get() == nullptr; }));
  EXPECT_NE(watch.last_error().find("no affinity tables"), std::string::npos) << watch.last_error();
  EXPECT_NE(holder.error().find("active version 2 unusable"), std::string::npos) << holder.error();
  EXPECT_NE(holder.error().find("placing by load alone"), std::string::npos) << holder.error();
  EXPECT_EQ(kept->version, *v1);  // Whoever held the old tables still has them.

  ASSERT_TRUE((*store)->Activate(*v3).ok());
  ASSERT_TRUE(Eventually([&] { return watch.last_error().find("4 devices") != std::string::npos; }))
      << watch.last_error();
  EXPECT_EQ(holder.Get(), nullptr);
  EXPECT_NE(holder.error().find("4 devices"), std::string::npos) << holder.error();

  ASSERT_TRUE((*store)->Activate(*v1).ok());
  ASSERT_TRUE(Eventually([&] { return watch.version() == *v1; }));
  EXPECT_EQ(holder.error(), "");

  // The planner goes away: the tables stay, the error says so.
  (*server)->Shutdown();
  ASSERT_TRUE(Eventually([&] {
    return holder.error().find("lost the planner") != std::string::npos;
  })) << holder.error();
  EXPECT_NE(holder.error().find("keeping version 1's tables"), std::string::npos) << holder.error();
  ASSERT_NE(holder.Get(), nullptr);
}

// A real vocabulary (151,936 tokens) and expert count (48 × 128, G = 8): the active version's
// prompt-score table (2.43 MB, in chunks; the full tables are about 11 MB) reaches the router,
// equal to the table computed from the stored tables.
TEST(PlannerWatchTest, RealScaleTablesArrive) {
  const planner::testing::RealScaleVersion big = planner::testing::MakeRealScaleVersion();
  const std::string db = planner::TempDatabasePath("watch_real_scale.db");
  auto store = planner::PlacementStore::Open(db);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->AddModel("qwen3", 48, 128).ok());
  planner::PlacementVersion v{.model = "qwen3", .name = "big", .algorithm = "semantic"};
  v.placement = big.placement;
  auto id = (*store)->Create(v, big.affinity);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE((*store)->Activate(*id).ok());
  auto server = planner::PlannerServer::Start(
      {.db = db, .service = {.poll_interval = absl::Milliseconds(20)}});
  ASSERT_TRUE(server.ok()) << server.status();
  TablesHolder holder;
  PlannerWatch watch(absl::StrCat("127.0.0.1:", (*server)->port()), "qwen3", 8, 151936, holder);
  ASSERT_TRUE(Eventually([&] { return watch.version() == *id; }, absl::Seconds(60)))
      << watch.last_error();
  EXPECT_EQ(holder.error(), "");
  const auto want = planner::PromptScoreTable::FromAffinity(
      *planner::TokenAffinity::Deserialize(big.affinity), big.placement, 151936);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(holder.Get()->log_terms, want->terms());
}

TEST(PlannerWatchTest, AnUnreachablePlannerIsReportedRetriedWithBackoffAndStopsCleanly) {
  TablesHolder holder;
  FakeClock clock;
  {
    PlannerWatch watch("127.0.0.1:1", "m", 2, 16, holder, &clock);
    ASSERT_TRUE(Eventually([&] { return watch.backoffs() == 1; }));
    EXPECT_NE(watch.last_error().find("127.0.0.1:1"), std::string::npos) << watch.last_error();
    EXPECT_EQ(watch.attempts(), 1);
    // The next attempt waits 200 ms of the clock's time, the one after 400 ms.
    clock.Advance(absl::Milliseconds(199));
    EXPECT_FALSE(Eventually([&] { return watch.attempts() > 1; }, absl::Milliseconds(200)));
    clock.Advance(absl::Milliseconds(1));
    ASSERT_TRUE(Eventually([&] { return watch.attempts() == 2; }));
    ASSERT_TRUE(Eventually([&] { return watch.backoffs() == 2; }));
    EXPECT_NE(watch.last_error().find("127.0.0.1:1"), std::string::npos) << watch.last_error();
    clock.Advance(absl::Milliseconds(399));
    EXPECT_FALSE(Eventually([&] { return watch.attempts() > 2; }, absl::Milliseconds(200)));
    clock.Advance(absl::Milliseconds(1));
    ASSERT_TRUE(Eventually([&] { return watch.attempts() == 3; }));
    // Destroyed in the middle of a backoff the clock will never finish: it stops at once.
  }
  EXPECT_EQ(holder.Get(), nullptr);
}

}  // namespace
}  // namespace semmoe::router
