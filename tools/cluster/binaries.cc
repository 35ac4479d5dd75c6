#include "tools/cluster/binaries.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file.h"

namespace semmoe::tools {

absl::StatusOr<std::string> FindBinary(const std::string& argv0, const std::string& flag,
                                       const std::string& relative) {
  if (!flag.empty()) return UserPath(flag);
  std::vector<std::string> candidates;
  if (const char* dir = std::getenv("RUNFILES_DIR")) {
    candidates.push_back(absl::StrCat(dir, "/semmoe/", relative));
  }
  candidates.push_back(absl::StrCat(argv0, ".runfiles/semmoe/", relative));
  // bazel-bin/<package>/<tool>: try each directory above the tool.
  std::string dir = argv0.substr(0, argv0.rfind('/'));
  for (int up = 0; up < 4 && !dir.empty(); ++up) {
    dir = dir.substr(0, dir.rfind('/'));
    candidates.push_back(absl::StrCat(dir, "/", relative));
  }
  for (const std::string& c : candidates) {
    struct stat st;
    char resolved[PATH_MAX];
    if (stat(c.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        realpath(c.c_str(), resolved) != nullptr) {
      return std::string(resolved);
    }
  }
  return absl::NotFoundError(absl::StrCat("cannot find the ", relative, " binary; build it or ",
                                          "pass --", relative.substr(relative.rfind('/') + 1),
                                          "_binary"));
}

}  // namespace semmoe::tools
