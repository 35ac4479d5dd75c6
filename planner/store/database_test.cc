#include "planner/store/database.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe::planner {
namespace {

TEST(DatabaseTest, InsertsAndQueriesWithBoundParameters) {
  auto db = Database::Open(":memory:");
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)
                  ->Execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL, "
                            "blob BLOB)")
                  .ok());
  auto insert = (*db)->Prepare("INSERT INTO t (name, score, blob) VALUES (?, ?, ?)");
  ASSERT_TRUE(insert.ok()) << insert.status();
  const std::string tricky = "it's \"quoted\"; DROP TABLE t; --";
  ASSERT_TRUE(insert->BindText(1, tricky).ok());
  ASSERT_TRUE(insert->BindDouble(2, 0.25).ok());
  const std::vector<uint8_t> bytes = {0, 1, 2, 255};
  ASSERT_TRUE(insert->BindBlob(3, bytes).ok());
  ASSERT_TRUE(insert->Run().ok());
  EXPECT_EQ((*db)->last_insert_rowid(), 1);

  ASSERT_TRUE(insert->Reset().ok());
  ASSERT_TRUE(insert->BindNull(1).ok());
  ASSERT_TRUE(insert->BindBlob(3, {}).ok());
  ASSERT_TRUE(insert->Run().ok());
  EXPECT_EQ((*db)->changes(), 1);

  auto select = (*db)->Prepare("SELECT id, name, score, blob FROM t ORDER BY id");
  ASSERT_TRUE(select.ok());
  ASSERT_TRUE(*select->Step());
  EXPECT_EQ(select->column_count(), 4);
  EXPECT_EQ(select->ColumnInt(0), 1);
  EXPECT_EQ(select->ColumnText(1), tricky);
  EXPECT_EQ(select->ColumnDouble(2), 0.25);
  EXPECT_EQ(select->ColumnBlob(3), bytes);
  ASSERT_TRUE(*select->Step());
  EXPECT_TRUE(select->ColumnIsNull(1));
  EXPECT_FALSE(select->ColumnIsNull(3));  // An empty blob is not NULL.
  EXPECT_TRUE(select->ColumnBlob(3).empty());
  EXPECT_FALSE(*select->Step());
}

TEST(DatabaseTest, ErrorsNameTheProblem) {
  auto db = Database::Open(":memory:");
  ASSERT_TRUE(db.ok());
  absl::Status bad_sql = (*db)->Execute("SELEC 1");
  EXPECT_EQ(bad_sql.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_sql.message().find("SELEC 1"), absl::string_view::npos) << bad_sql;
  EXPECT_EQ((*db)->Prepare("SELECT * FROM missing").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*db)->Prepare("SELECT 1; SELECT 2").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*db)->Prepare("   ").status().code(), absl::StatusCode::kInvalidArgument);
  auto one = (*db)->Prepare("SELECT ?");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->BindInt(2, 5).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(one->Run().code(), absl::StatusCode::kFailedPrecondition);  // It returns a row.
}

TEST(DatabaseTest, ForeignKeysAreEnforced) {
  auto db = Database::Open(":memory:");
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)
                  ->Execute("CREATE TABLE parent (id INTEGER PRIMARY KEY);"
                            "CREATE TABLE child (parent_id INTEGER NOT NULL REFERENCES parent(id))")
                  .ok());
  absl::Status orphan = (*db)->Execute("INSERT INTO child VALUES (42)");
  EXPECT_EQ(orphan.code(), absl::StatusCode::kFailedPrecondition) << orphan;
}

TEST(DatabaseTest, TransactionRollsBackUnlessCommitted) {
  const std::string path = TempDatabasePath("tx.db");
  {
    auto db = Database::Open(path);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Execute("CREATE TABLE t (x INTEGER)").ok());
    {
      auto tx = Transaction::Begin(**db);
      ASSERT_TRUE(tx.ok());
      ASSERT_TRUE((*db)->Execute("INSERT INTO t VALUES (1)").ok());
    }  // Dropped: rolled back.
    {
      auto tx = Transaction::Begin(**db);
      ASSERT_TRUE(tx.ok());
      ASSERT_TRUE((*db)->Execute("INSERT INTO t VALUES (2)").ok());
      ASSERT_TRUE((*tx)->Commit().ok());
      EXPECT_EQ((*tx)->Commit().code(), absl::StatusCode::kFailedPrecondition);
    }
  }
  auto reopened = Database::Open(path, {.create_if_missing = false});
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  auto select = (*reopened)->Prepare("SELECT group_concat(x) FROM t");
  ASSERT_TRUE(select.ok());
  ASSERT_TRUE(*select->Step());
  EXPECT_EQ(select->ColumnText(0), "2");
}

TEST(DatabaseTest, OpenRefusesMissingAndForeignFiles) {
  EXPECT_EQ(
      Database::Open(TempDatabasePath("absent.db"), {.create_if_missing = false}).status().code(),
      absl::StatusCode::kNotFound);
  const std::string path = TempDatabasePath("not_a_db.db");
  {
    std::ofstream out(path);
    out << "this is a placement, honest, not a database at all; padding padding padding "
           "padding padding padding padding padding padding padding padding padding padding";
  }
  auto db = Database::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(db.status().message().find(path), absl::string_view::npos) << db.status();
  // The foreign file was not overwritten.
  std::ifstream in(path);
  std::string first;
  in >> first;
  EXPECT_EQ(first, "this");
}

TEST(DatabaseTest, ReadOnlyConnectionsCannotWrite) {
  const std::string path = TempDatabasePath("ro.db");
  ASSERT_TRUE(Database::Open(path).ok());
  auto db = Database::Open(path, {.read_only = true});
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_FALSE((*db)->Execute("CREATE TABLE t (x)").ok());
}

}  // namespace
}  // namespace semmoe::planner
