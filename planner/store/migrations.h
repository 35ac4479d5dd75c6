// Schema migrations with a recorded schema version (table `meta`, key `schema_version`).
//
// A migration list is numbered 1..N with no gaps. Migrate() applies, in order, each migration
// newer than the database's version, each in its own transaction together with the version bump,
// so a crash leaves the database at the last completed version. A database newer than the list
// (written by a newer binary) is refused untouched.
#ifndef SEMMOE_PLANNER_STORE_MIGRATIONS_H_
#define SEMMOE_PLANNER_STORE_MIGRATIONS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "planner/store/database.h"

namespace semmoe::planner {

struct Migration {
  int version = 0;  // 1-based; migrations[i].version == i + 1.
  std::string sql;  // One or more statements.
};

// The recorded schema version; 0 for a database never migrated.
absl::StatusOr<int> SchemaVersion(Database& db);

// Brings `db` to the last version in `migrations`. Returns the version reached.
// FAILED_PRECONDITION if the database is newer than the list; INVALID_ARGUMENT for a badly
// numbered list; a failing migration's error (its version rolled back) otherwise.
absl::StatusOr<int> Migrate(Database& db, absl::Span<const Migration> migrations);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_STORE_MIGRATIONS_H_
