// Whole-file reads and writes with Status errors that name the path.
#ifndef SEMMOE_COMMON_FILE_H_
#define SEMMOE_COMMON_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmoe {

// The most a configuration file named by a flag may hold (topology, cluster profile, chat
// template, placement and affinity JSON, tokenizer.json, config.json): far above any real one
// (a Qwen3 tokenizer.json is 11 MB), far below what would exhaust a host.
inline constexpr uint64_t kMaxConfigFileBytes = uint64_t{64} << 20;
// The most a data file read whole may hold (a routing trace's arrays, a reference's logits).
inline constexpr uint64_t kMaxDataFileBytes = uint64_t{16} << 30;

// The bytes of `path`, a regular file or a pipe (`--flag=<(jq ...)`, a FIFO) of at most
// `max_bytes`: a device (/dev/zero), a directory or a socket is InvalidArgument naming the path
// and what it is, and so is a file over the cap (checked before reading and while reading, as a
// file may grow and a pipe has no size). NotFound if it does not exist, else
// Internal/PermissionDenied with errno. A FIFO with no writer reads as empty, it does not block.
absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     uint64_t max_bytes = kMaxConfigFileBytes);

// ReadFile for the file a command-line flag names, its errors prefixed "--FLAG: ".
absl::StatusOr<std::string> ReadFlagFile(absl::string_view flag, const std::string& path,
                                         uint64_t max_bytes = kMaxConfigFileBytes);

// Opens `path` for reading (O_CLOEXEC, blocking) after checking it is a regular file or a pipe,
// with ReadFile's errors; the caller owns the descriptor. For readers that stream a file instead
// of reading it whole (traces, JSONL batches).
absl::StatusOr<int> OpenInputFile(const std::string& path);

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
