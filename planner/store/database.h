// RAII wrappers over SQLite: Database (a connection), Statement (a prepared statement with bound
// parameters), Transaction (rolls back unless committed).
//
// Every connection runs with foreign keys on, WAL journaling (for files) and a busy timeout.
// Errors are Statuses naming the SQL and SQLite's message; nothing here throws or aborts.
//
// Thread-compatible: use a Database (and its Statements) from one thread at a time; open one
// connection per thread for concurrency (WAL lets readers run beside one writer).
#ifndef SEMMOE_PLANNER_STORE_DATABASE_H_
#define SEMMOE_PLANNER_STORE_DATABASE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

struct sqlite3;
struct sqlite3_stmt;

namespace semmoe::planner {

class Statement;

struct DatabaseOptions {
  // Create the file if it does not exist (else NOT_FOUND).
  bool create_if_missing = true;
  // Open read-only (writes fail with FAILED_PRECONDITION-like SQLite errors).
  bool read_only = false;
  // How long to wait for another connection's lock before answering UNAVAILABLE. >= 0.
  absl::Duration busy_timeout = absl::Seconds(5);
};

class Database {
 public:
  // Opens `path` (":memory:" for a private in-memory database) and checks it is a readable
  // SQLite database: a file of anything else is DATA_LOSS naming the path.
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path,
                                                        const DatabaseOptions& options = {});
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one or more `;`-separated statements that return no rows.
  absl::Status Execute(absl::string_view sql);

  // Prepares one statement. The Statement must not outlive this Database.
  absl::StatusOr<Statement> Prepare(absl::string_view sql);

  int64_t last_insert_rowid() const;
  // Rows changed by the last INSERT/UPDATE/DELETE.
  int changes() const;
  const std::string& path() const { return path_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  friend class Statement;

  sqlite3* db_;
  std::string path_;
};

class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  ~Statement();

  // Parameters are 1-based, as in SQL (`?1`, or the order of `?`).
  absl::Status BindInt(int index, int64_t value);
  absl::Status BindDouble(int index, double value);
  absl::Status BindText(int index, absl::string_view value);
  absl::Status BindBlob(int index, absl::Span<const uint8_t> value);
  absl::Status BindNull(int index);

  // Advances: true when a row is ready to read, false when the statement is done.
  absl::StatusOr<bool> Step();
  // Steps to completion, expecting no rows (for INSERT/UPDATE/DELETE).
  absl::Status Run();
  // Makes the statement runnable again, keeping its bindings.
  absl::Status Reset();

  // Columns of the current row, 0-based. Reading a NULL gives 0 / "" / empty.
  int column_count() const;
  bool ColumnIsNull(int index) const;
  int64_t ColumnInt(int index) const;
  double ColumnDouble(int index) const;
  std::string ColumnText(int index) const;
  std::vector<uint8_t> ColumnBlob(int index) const;

 private:
  friend class Database;
  Statement(sqlite3_stmt* stmt, sqlite3* db) : stmt_(stmt), db_(db) {}
  absl::Status BindResult(int rc, int index);

  sqlite3_stmt* stmt_;
  sqlite3* db_;  // Not owned.
};

// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless Commit() succeeded. A crash
// between the two leaves the database as before the transaction.
class Transaction {
 public:
  // REQUIRES: no transaction is open on `db`. `db` must outlive the Transaction.
  static absl::StatusOr<std::unique_ptr<Transaction>> Begin(Database& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  absl::Status Commit();

 private:
  explicit Transaction(Database& db) : db_(db) {}
  Database& db_;
  bool done_ = false;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_STORE_DATABASE_H_
