// Helpers for the fuzz targets: the input as a string, or written to a per-process file for
// parsers that read files.
#ifndef SEMMOE_TESTS_FUZZ_FUZZ_UTIL_H_
#define SEMMOE_TESTS_FUZZ_FUZZ_UTIL_H_

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace semmoe::fuzz {

inline std::string Text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Writes the input to $TEST_TMPDIR (else /tmp)/fuzz-<pid>-<tag> and returns the path.
inline std::string ToFile(const uint8_t* data, size_t size, const char* tag) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path =
      std::string(dir != nullptr ? dir : "/tmp") + "/fuzz-" + std::to_string(getpid()) + "-" + tag;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace semmoe::fuzz

#endif  // SEMMOE_TESTS_FUZZ_FUZZ_UTIL_H_
