// Whole-file reads and writes with Status errors that name the path.
#ifndef SEMMOE_COMMON_FILE_H_
#define SEMMOE_COMMON_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmoe {

// The bytes of `path`. NotFound if it does not exist, else Internal/PermissionDenied with errno.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `contents` to `path` (created or truncated), without fsync: for scratch files.
absl::Status WriteFile(const std::string& path, absl::string_view contents);

// Writes `contents` to `path` atomically: a temporary file beside it, fsync, rename.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// The last component of `path`, trailing slashes ignored: "m" for "a/m/" (a model directory's
// name, as the planner and the router call the model by default).
std::string BaseName(absl::string_view path);

// "a/b" from "a" and "b"; `b` absolute wins.
std::string JoinPath(absl::string_view a, absl::string_view b);

// A path given by the user on a command line: under `bazel run` relative paths mean the
// directory bazel was invoked from (BUILD_WORKING_DIRECTORY), not the runfiles tree.
std::string UserPath(const std::string& path);

}  // namespace semmoe

#endif  // SEMMOE_COMMON_FILE_H_
