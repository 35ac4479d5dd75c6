#include "engine/parallel/dir_store.h"

#include <unistd.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file.h"
#include "gloo/common/error.h"

namespace semmoe::engine {

std::string DirStore::PathOf(const std::string& key) const {
  // Keys hold '/'; hex keeps every key one plain file name.
  std::string name = "k";
  for (unsigned char c : key) absl::StrAppend(&name, absl::Hex(c, absl::kZeroPad2));
  return JoinPath(dir_, name);
}

void DirStore::set(const std::string& key, const std::vector<char>& data) {
  const absl::Status s = WriteFileAtomically(PathOf(key), std::string(data.begin(), data.end()));
  if (!s.ok()) throw gloo::IoException(absl::StrCat("rendezvous dir store: set ", key, ": ", s.message()));
}

std::vector<char> DirStore::get(const std::string& key) {
  wait({key});
  absl::StatusOr<std::string> text = ReadFile(PathOf(key));
  if (!text.ok()) {
    throw gloo::IoException(absl::StrCat("rendezvous dir store: get ", key, ": ",
                                         text.status().message()));
  }
  return std::vector<char>(text->begin(), text->end());
}

void DirStore::wait(const std::vector<std::string>& keys) { wait(keys, default_wait_); }

void DirStore::wait(const std::vector<std::string>& keys,
                    const std::chrono::milliseconds& timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::vector<std::string> missing;
    for (const std::string& key : keys) {
      if (access(PathOf(key).c_str(), F_OK) != 0) missing.push_back(key);
    }
    if (missing.empty()) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      throw gloo::IoException(absl::StrCat("rendezvous dir store ", dir_, ": timed out after ",
                                           timeout.count(), " ms waiting for ",
                                           absl::StrJoin(missing, ", ")));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace semmoe::engine
