// EngineFollow against a real planner server (loopback gRPC, SQLite in the test's temp dir).
#include "router/tables/engine_follow.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
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

int64_t HeldVersion(const TablesHolder& holder) {
  auto t = holder.Get();
  return t == nullptr ? 0 : t->version;
}

TEST(EngineFollowTest, PlacesWithTheVersionTheEnginesServe) {
  const std::string db = planner::TempDatabasePath("follow.db");
  auto store = planner::PlacementStore::Open(db);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->AddModel("m", 2, 4).ok());
  planner::PlacementVersion v;
  v.model = "m";
  v.algorithm = "vanilla";
  v.placement = *planner::Placement::Vanilla({0, 1}, 4, 2);
  auto v1 = (*store)->Create(v, Tables());
  v.placement = *planner::Placement::Random({0, 1}, 4, 2, 7);
  auto v2 = (*store)->Create(v, Tables());
  auto v3 = (*store)->Create(v, "");  // No tables.
  ASSERT_TRUE(v1.ok() && v2.ok() && v3.ok());
  auto server = planner::PlannerServer::Start({.db = db});
  ASSERT_TRUE(server.ok()) << server.status();

  TablesHolder holder;
  EngineFollow follow(absl::StrCat("127.0.0.1:", (*server)->port()), 2, 16, holder);
  follow.Observe({*v1, *v1}, {0, 0});
  ASSERT_TRUE(Eventually([&] { return HeldVersion(holder) == *v1; }));
  EXPECT_EQ(holder.error(), "");

  // Staging v2: fetched ahead, but the tables stay v1's until every rank serves v2.
  follow.Observe({*v1, *v1}, {*v2, *v2});
  ASSERT_TRUE(Eventually([&] { return follow.Cached(*v2); }));
  EXPECT_EQ(HeldVersion(holder), *v1);
  follow.Observe({*v2, *v1}, {0, *v2});  // Mid-switch as the poller saw it: no change.
  EXPECT_EQ(HeldVersion(holder), *v1);
  follow.Observe({*v2, *v2}, {0, 0});  // Switched: v2's tables at once (prefetched).
  EXPECT_EQ(HeldVersion(holder), *v2);
  follow.Observe({*v1, -1}, {0, 0});  // Back to v1 (cached); a rank that did not answer.
  EXPECT_EQ(HeldVersion(holder), *v1);

  // A version without tables: placing by load alone, and saying why — never v1's tables.
  follow.Observe({*v3, *v3}, {0, 0});
  EXPECT_EQ(holder.Get(), nullptr);
  ASSERT_TRUE(Eventually([&] {
    return holder.error().find("cannot be fetched") != std::string::npos;
  })) << holder.error();
  EXPECT_NE(holder.error().find(absl::StrCat("the engines serve version ", *v3)), std::string::npos)
      << holder.error();

  // Engines on a file or vanilla (version 0): the tables stay as they are.
  follow.Observe({0, 0}, {0, 0});
  EXPECT_EQ(holder.Get(), nullptr);
}

}  // namespace
}  // namespace semmoe::router
