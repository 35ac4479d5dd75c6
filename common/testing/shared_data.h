// Where tests find the data outside the repository: the shared models and prompts
// (../shared, exported by `./semmoe test` as SEMMOE_SHARED_DIR) and the real Qwen3
// tokenizer.json fetched by setup (SEMMOE_QWEN3_TOKENIZER). `.bazelrc` passes both through.
//
// A test that needs one calls the macro, which skips (visibly, with the reason) when the
// variable is unset — e.g. a bare `bazel test` — and fails when it is set but wrong.
#ifndef SEMMOE_COMMON_TESTING_SHARED_DATA_H_
#define SEMMOE_COMMON_TESTING_SHARED_DATA_H_

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace semmoe::testing {

// The value of `var`, or "" if unset.
inline std::string EnvPath(const char* var) {
  const char* value = std::getenv(var);
  return value == nullptr ? "" : value;
}

inline bool PathExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Names of the models under $SEMMOE_SHARED_DIR/models that have reference outputs
// (reference/prompts.json), sorted; empty when the variable is unset. For TEST_P matrices over
// every shared model.
inline std::vector<std::string> SharedModelsWithReference() {
  std::vector<std::string> names;
  const std::string shared = EnvPath("SEMMOE_SHARED_DIR");
  if (shared.empty()) return names;
  DIR* dir = opendir((shared + "/models").c_str());
  if (dir == nullptr) return names;
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name[0] != '.' && PathExists(shared + "/models/" + name + "/reference/prompts.json")) {
      names.push_back(name);
    }
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace semmoe::testing

// Declares `std::string var_name` = $env_var, skipping the test if unset and failing it if the
// path does not exist.
#define SEMMOE_REQUIRE_PATH_FROM_ENV(var_name, env_var)                                   \
  std::string var_name = ::semmoe::testing::EnvPath(env_var);                             \
  if (var_name.empty()) GTEST_SKIP() << env_var " is not set (./semmoe test sets it)";    \
  ASSERT_TRUE(::semmoe::testing::PathExists(var_name)) << env_var "=" << var_name         \
                                                       << " does not exist"

#define SEMMOE_REQUIRE_SHARED_DIR(var_name) \
  SEMMOE_REQUIRE_PATH_FROM_ENV(var_name, "SEMMOE_SHARED_DIR")

#endif  // SEMMOE_COMMON_TESTING_SHARED_DATA_H_
