// Finding this workspace's other binaries from a tool: under `bazel run` in the runfiles tree,
// else beside the tool in bazel-bin.
#ifndef SEMMOE_TOOLS_CLUSTER_BINARIES_H_
#define SEMMOE_TOOLS_CLUSTER_BINARIES_H_

#include <string>

#include "absl/status/statusor.h"

namespace semmoe::tools {

// `relative` is the workspace path of the binary ("engine/engine"). A non-empty `flag` (a
// --*_binary flag) wins. `argv0` is the running tool's resolved path. NotFound names the
// binary and the flag to pass.
absl::StatusOr<std::string> FindBinary(const std::string& argv0, const std::string& flag,
                                       const std::string& relative);

}  // namespace semmoe::tools

#endif  // SEMMOE_TOOLS_CLUSTER_BINARIES_H_
