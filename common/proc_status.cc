#include "common/proc_status.h"

#include <fstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace semmoe {

int64_t ProcStatusBytes(const std::string& field, int pid) {
  std::ifstream in(pid == 0 ? std::string("/proc/self/status") : absl::StrCat("/proc/", pid, "/status"));
  const std::string key = field + ":";
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    std::vector<std::string> parts = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    int64_t kb = 0;
    if (parts.size() >= 3 && parts[2] == "kB" && absl::SimpleAtoi(parts[1], &kb)) return kb * 1024;
    return -1;
  }
  return -1;
}

}  // namespace semmoe
