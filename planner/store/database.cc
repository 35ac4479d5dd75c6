#include "planner/store/database.h"

#include <sqlite3.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "glog/logging.h"

namespace semmoe::planner {
namespace {

// The canonical code for an SQLite result code, with `message`.
absl::Status StatusFor(int rc, const std::string& message) {
  switch (rc & 0xFF) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    case SQLITE_CONSTRAINT:
      return absl::FailedPreconditionError(message);
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return absl::DataLossError(message);
    case SQLITE_CANTOPEN:
      return absl::NotFoundError(message);
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return absl::PermissionDeniedError(message);
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return absl::ResourceExhaustedError(message);
    case SQLITE_MISUSE:
    case SQLITE_RANGE:
    case SQLITE_ERROR:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what) {
  return StatusFor(
      rc, absl::StrCat(what, ": ", db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path,
                                                         const DatabaseOptions& options) {
  if (options.busy_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("database: busy_timeout must not be negative");
  }
  int flags = options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (options.create_if_missing && !options.read_only) flags |= SQLITE_OPEN_CREATE;
  flags |= SQLITE_OPEN_NOMUTEX;  // Thread-compatible by contract; no per-call locking needed.
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  std::unique_ptr<Database> db(new Database(raw, path));  // Closes `raw` even on failure.
  if (rc != SQLITE_OK) return SqliteError(raw, rc, absl::StrCat("opening database ", path));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, static_cast<int>(absl::ToInt64Milliseconds(options.busy_timeout)));

  // Reading the schema is what reveals a file that is not a database (or is corrupt).
  absl::Status readable = db->Execute("SELECT count(*) FROM sqlite_master;");
  if (!readable.ok()) {
    return absl::DataLossError(
        absl::StrCat(path, " is not a readable SQLite database: ", readable.message()));
  }
  RETURN_IF_ERROR(db->Execute("PRAGMA foreign_keys = ON;"));
  if (!options.read_only && path != ":memory:") {
    RETURN_IF_ERROR(db->Execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"));
  }
  return db;
}

Database::~Database() {
  if (db_ != nullptr) {
    const int rc = sqlite3_close_v2(db_);
    // Statements outliving their Database is a programming error the contract forbids.
    LOG_IF(ERROR, rc != SQLITE_OK) << "closing " << path_ << ": " << sqlite3_errstr(rc);
  }
}

absl::Status Database::Execute(absl::string_view sql) {
  char* error = nullptr;
  const std::string text(sql);
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return absl::OkStatus();
  const std::string message =
      absl::StrCat("executing \"", sql, "\": ", error != nullptr ? error : sqlite3_errstr(rc));
  sqlite3_free(error);
  return StatusFor(rc, message);
}

absl::StatusOr<Statement> Database::Prepare(absl::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, &tail);
  if (rc != SQLITE_OK) return SqliteError(db_, rc, absl::StrCat("preparing \"", sql, "\""));
  Statement statement(stmt, db_);
  if (stmt == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("no SQL statement in \"", sql, "\""));
  }
  for (const char* p = tail; p != nullptr && p < sql.data() + sql.size(); ++p) {
    if (*p != ' ' && *p != '\n' && *p != '\t' && *p != ';') {
      return absl::InvalidArgumentError(
          absl::StrCat("more than one SQL statement in \"", sql, "\"; use Execute()"));
    }
  }
  return statement;
}

int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

int Database::changes() const { return sqlite3_changes(db_); }

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)), db_(other.db_) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    db_ = other.db_;
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

absl::Status Statement::BindResult(int rc, int index) {
  if (rc == SQLITE_OK) return absl::OkStatus();
  return SqliteError(db_, rc,
                     absl::StrCat("binding parameter ", index, " of \"", sqlite3_sql(stmt_), "\""));
}

absl::Status Statement::BindInt(int index, int64_t value) {
  return BindResult(sqlite3_bind_int64(stmt_, index, value), index);
}

absl::Status Statement::BindDouble(int index, double value) {
  return BindResult(sqlite3_bind_double(stmt_, index, value), index);
}

absl::Status Statement::BindText(int index, absl::string_view value) {
  return BindResult(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      index);
}

absl::Status Statement::BindBlob(int index, absl::Span<const uint8_t> value) {
  // A zero-length blob is still a blob, not NULL.
  static const uint8_t kEmpty = 0;
  return BindResult(sqlite3_bind_blob64(stmt_, index, value.empty() ? &kEmpty : value.data(),
                                        value.size(), SQLITE_TRANSIENT),
                    index);
}

absl::Status Statement::BindNull(int index) {
  return BindResult(sqlite3_bind_null(stmt_, index), index);
}

absl::StatusOr<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, rc, absl::StrCat("running \"", sqlite3_sql(stmt_), "\""));
}

absl::Status Statement::Run() {
  absl::StatusOr<bool> row = Step();
  if (!row.ok()) return row.status();
  if (*row) {
    return absl::FailedPreconditionError(
        absl::StrCat("\"", sqlite3_sql(stmt_), "\" returned rows; read them with Step()"));
  }
  return absl::OkStatus();
}

absl::Status Statement::Reset() {
  const int rc = sqlite3_reset(stmt_);
  // sqlite3_reset repeats the last Step() error; the statement is reset regardless.
  if (rc != SQLITE_OK) return SqliteError(db_, rc, "resetting statement");
  return absl::OkStatus();
}

int Statement::column_count() const { return sqlite3_column_count(stmt_); }

bool Statement::ColumnIsNull(int index) const {
  return sqlite3_column_type(stmt_, index) == SQLITE_NULL;
}

int64_t Statement::ColumnInt(int index) const { return sqlite3_column_int64(stmt_, index); }

double Statement::ColumnDouble(int index) const { return sqlite3_column_double(stmt_, index); }

std::string Statement::ColumnText(int index) const {
  const unsigned char* text = sqlite3_column_text(stmt_, index);
  const int bytes = sqlite3_column_bytes(stmt_, index);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text), bytes);
}

std::vector<uint8_t> Statement::ColumnBlob(int index) const {
  const auto* data = static_cast<const uint8_t*>(sqlite3_column_blob(stmt_, index));
  const int bytes = sqlite3_column_bytes(stmt_, index);
  return data == nullptr ? std::vector<uint8_t>() : std::vector<uint8_t>(data, data + bytes);
}

absl::StatusOr<std::unique_ptr<Transaction>> Transaction::Begin(Database& db) {
  RETURN_IF_ERROR(db.Execute("BEGIN IMMEDIATE;"));
  return std::unique_ptr<Transaction>(new Transaction(db));
}

Transaction::~Transaction() {
  if (done_) return;
  absl::Status status = db_.Execute("ROLLBACK;");
  LOG_IF(ERROR, !status.ok()) << "rolling back: " << status;
}

absl::Status Transaction::Commit() {
  if (done_) return absl::FailedPreconditionError("transaction already finished");
  absl::Status status = db_.Execute("COMMIT;");
  if (status.ok()) done_ = true;
  return status;
}

}  // namespace semmoe::planner
