#include "planner/store/migrations.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace semmoe::planner {
namespace {

constexpr char kCreateMeta[] =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);";

}  // namespace

absl::StatusOr<int> SchemaVersion(Database& db) {
  ASSIGN_OR_RETURN(Statement has_meta,
                   db.Prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                              "name = 'meta'"));
  ASSIGN_OR_RETURN(bool row, has_meta.Step());
  if (!row || has_meta.ColumnInt(0) == 0) return 0;

  ASSIGN_OR_RETURN(Statement select,
                   db.Prepare("SELECT value FROM meta WHERE key = 'schema_version'"));
  ASSIGN_OR_RETURN(row, select.Step());
  if (!row) return 0;
  int version = 0;
  const std::string text = select.ColumnText(0);
  if (!absl::SimpleAtoi(text, &version) || version < 0) {
    return absl::DataLossError(
        absl::StrCat(db.path(), ": schema_version \"", text, "\" is not a version number"));
  }
  return version;
}

absl::StatusOr<int> Migrate(Database& db, absl::Span<const Migration> migrations) {
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i) + 1) {
      return absl::InvalidArgumentError(absl::StrCat("migration #", i, " has version ",
                                                     migrations[i].version, ", expected ", i + 1));
    }
  }
  const int latest = static_cast<int>(migrations.size());
  ASSIGN_OR_RETURN(int current, SchemaVersion(db));
  if (current > latest) {
    return absl::FailedPreconditionError(absl::StrCat(
        db.path(), " has schema version ", current, ", newer than this binary understands (",
        latest, "); upgrade the binary, the database was left untouched"));
  }
  for (int v = current + 1; v <= latest; ++v) {
    ASSIGN_OR_RETURN(std::unique_ptr<Transaction> transaction, Transaction::Begin(db));
    RETURN_IF_ERROR(db.Execute(kCreateMeta));
    absl::Status applied = db.Execute(migrations[v - 1].sql);
    if (!applied.ok()) {
      return absl::Status(applied.code(), absl::StrCat("schema migration to version ", v,
                                                       " failed (database "
                                                       "left at version ",
                                                       v - 1, "): ", applied.message()));
    }
    ASSIGN_OR_RETURN(Statement record,
                     db.Prepare("INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                                "ON CONFLICT(key) DO UPDATE SET value = excluded.value"));
    RETURN_IF_ERROR(record.BindText(1, absl::StrCat(v)));
    RETURN_IF_ERROR(record.Run());
    RETURN_IF_ERROR(transaction->Commit());
  }
  return latest;
}

}  // namespace semmoe::planner
