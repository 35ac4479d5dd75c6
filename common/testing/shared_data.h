// Where tests find the data outside the repository: the shared models and prompts
// (../shared, exported by `./semmoe test` as SEMMOE_SHARED_DIR) and the real Qwen3
// tokenizer.json fetched by setup (SEMMOE_QWEN3_TOKENIZER). `.bazelrc` passes both through.
//
// A test that needs one calls the macro, which skips (visibly, with the reason) when the
// variable is unset — e.g. a bare `bazel test` — and fails when it is set but wrong.
#ifndef SEMMOE_COMMON_TESTING_SHARED_DATA_H_
#define SEMMOE_COMMON_TESTING_SHARED_DATA_H_

#include <cstdlib>
#include <string>
#include <sys/stat.h>

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
