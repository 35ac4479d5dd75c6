#include "planner/store/migrations.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe::planner {
namespace {

const std::vector<Migration>& Schema() {
  static const auto* schema = new std::vector<Migration>{
      {1, "CREATE TABLE placements (id INTEGER PRIMARY KEY, algo TEXT NOT NULL);"},
      {2,
       "ALTER TABLE placements ADD COLUMN status TEXT NOT NULL DEFAULT 'draft';"
       "CREATE INDEX placements_by_status ON placements(status);"},
  };
  return *schema;
}

int64_t CountRows(Database& db, const std::string& table) {
  auto select = db.Prepare("SELECT count(*) FROM " + table);
  EXPECT_TRUE(select.ok()) << select.status();
  EXPECT_TRUE(*select->Step());
  return select->ColumnInt(0);
}

TEST(MigrationsTest, FreshDatabaseMigratesThenQueries) {
  auto db = Database::Open(TempDatabasePath("fresh.db"));
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(*SchemaVersion(**db), 0);
  absl::StatusOr<int> version = Migrate(**db, Schema());
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, 2);
  EXPECT_EQ(*SchemaVersion(**db), 2);
  ASSERT_TRUE((*db)->Execute("INSERT INTO placements (algo) VALUES ('vanilla')").ok());
  auto select = (*db)->Prepare("SELECT algo, status FROM placements");
  ASSERT_TRUE(select.ok());
  ASSERT_TRUE(*select->Step());
  EXPECT_EQ(select->ColumnText(0), "vanilla");
  EXPECT_EQ(select->ColumnText(1), "draft");
}

TEST(MigrationsTest, UpgradesStepByStepAndIsIdempotent) {
  const std::string path = TempDatabasePath("upgrade.db");
  {
    auto db = Database::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_EQ(*Migrate(**db, absl::MakeConstSpan(Schema()).subspan(0, 1)), 1);
    ASSERT_TRUE((*db)->Execute("INSERT INTO placements (algo) VALUES ('eplb')").ok());
  }
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok());
  ASSERT_EQ(*Migrate(**db, Schema()), 2);
  ASSERT_EQ(*Migrate(**db, Schema()), 2);
  EXPECT_EQ(CountRows(**db, "placements"), 1);  // Data survived the upgrade.
}

TEST(MigrationsTest, RefusesADatabaseFromANewerBinaryUntouched) {
  auto db = Database::Open(TempDatabasePath("newer.db"));
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(Migrate(**db, Schema()).ok());
  absl::StatusOr<int> old_binary = Migrate(**db, absl::MakeConstSpan(Schema()).subspan(0, 1));
  EXPECT_EQ(old_binary.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(old_binary.status().message().find("newer"), absl::string_view::npos);
  EXPECT_EQ(*SchemaVersion(**db), 2);
}

TEST(MigrationsTest, FailedMigrationRollsBackToThePreviousVersion) {
  auto db = Database::Open(TempDatabasePath("failed.db"));
  ASSERT_TRUE(db.ok());
  std::vector<Migration> broken = Schema();
  broken.push_back({3, "CREATE TABLE half_done (x INTEGER); THIS IS NOT SQL;"});
  absl::StatusOr<int> version = Migrate(**db, broken);
  ASSERT_FALSE(version.ok());
  EXPECT_NE(version.status().message().find("version 3"), absl::string_view::npos)
      << version.status();
  EXPECT_EQ(*SchemaVersion(**db), 2);
  EXPECT_FALSE((*db)->Prepare("SELECT * FROM half_done").ok());  // Rolled back with it.
}

TEST(MigrationsTest, RejectsBadlyNumberedLists) {
  auto db = Database::Open(":memory:");
  ASSERT_TRUE(db.ok());
  const std::vector<Migration> gap = {{1, "SELECT 1;"}, {3, "SELECT 1;"}};
  EXPECT_EQ(Migrate(**db, gap).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*SchemaVersion(**db), 0);
}

TEST(MigrationsTest, GarbledVersionIsDataLoss) {
  auto db = Database::Open(":memory:");
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(Migrate(**db, Schema()).ok());
  ASSERT_TRUE((*db)->Execute("UPDATE meta SET value = 'two' WHERE key = 'schema_version'").ok());
  EXPECT_EQ(SchemaVersion(**db).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(Migrate(**db, Schema()).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace semmoe::planner
