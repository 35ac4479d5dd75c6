// Test helper: a fresh database path under $TEST_TMPDIR.
#ifndef SEMMOE_PLANNER_STORE_TESTING_TEMP_DATABASE_PATH_H_
#define SEMMOE_PLANNER_STORE_TESTING_TEMP_DATABASE_PATH_H_

#include <cstdio>
#include <cstdlib>
#include <string>

namespace semmoe::planner {

// $TEST_TMPDIR/name (or /tmp/name outside Bazel), with any database left there by an earlier
// run removed, together with its WAL and shared-memory files.
inline std::string TempDatabasePath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_STORE_TESTING_TEMP_DATABASE_PATH_H_
