// Fuzz inputs that stand for several files: the parts are joined by the line "\n@@\n".
#ifndef SEMMOE_TESTS_FUZZ_SPLIT_UTIL_H_
#define SEMMOE_TESTS_FUZZ_SPLIT_UTIL_H_

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace semmoe::fuzz {

// Exactly `n` parts (missing ones empty; the last takes the rest).
inline std::vector<std::string> SplitParts(const std::string& text, size_t n) {
  std::vector<std::string> parts;
  size_t from = 0;
  while (parts.size() + 1 < n) {
    const size_t at = text.find("\n@@\n", from);
    if (at == std::string::npos) break;
    parts.push_back(text.substr(from, at - from));
    from = at + 4;
  }
  parts.push_back(text.substr(from));
  parts.resize(n);
  return parts;
}

// A per-process directory $TEST_TMPDIR (else /tmp)/fuzz-<pid>-<tag>/, created if missing.
inline std::string Dir(const char* tag) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/fuzz-" +
                          std::to_string(getpid()) + "-" + tag;
  mkdir(dir.c_str(), 0755);
  return dir;
}

inline void Write(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
}

}  // namespace semmoe::fuzz

#endif  // SEMMOE_TESTS_FUZZ_SPLIT_UTIL_H_
