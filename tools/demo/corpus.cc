#include "tools/demo/corpus.h"

#include <algorithm>
#include <deque>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file.h"

namespace semmoe::tools {
namespace {

namespace fs = std::filesystem;

constexpr uintmax_t kMaxFileBytes = 256 << 10;

std::vector<std::string> Files(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  if (fs::is_regular_file(root, ec)) return {root};
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && it->file_size(ec) <= kMaxFileBytes) {
      out.push_back(it->path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool LooksLikeText(const std::string& bytes) {
  return !bytes.empty() && bytes.find('\0') == std::string::npos;
}

// Chunks of about `chars` at line boundaries; blank-only chunks dropped.
std::vector<std::string> Chunks(const std::string& text, int chars) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.size(), start + chars);
    if (end < text.size()) {
      const size_t nl = text.rfind('\n', end);
      if (nl != std::string::npos && nl > start) end = nl + 1;
    }
    std::string chunk = text.substr(start, end - start);
    if (chunk.find_first_not_of(" \t\r\n") != std::string::npos) out.push_back(std::move(chunk));
    start = end;
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> CollectPrompts(const std::vector<std::string>& roots,
                                                        int max_prompts, int chunk_chars) {
  // Per root, a lazy stream of chunks.
  struct Source {
    std::vector<std::string> files;
    size_t next_file = 0;
    std::deque<std::string> chunks;
  };
  std::vector<Source> sources;
  for (const std::string& root : roots) sources.push_back({Files(root)});
  std::vector<std::string> out;
  bool any = true;
  while (static_cast<int>(out.size()) < max_prompts && any) {
    any = false;
    for (Source& s : sources) {
      while (s.chunks.empty() && s.next_file < s.files.size()) {
        absl::StatusOr<std::string> bytes = ReadFile(s.files[s.next_file++]);
        if (bytes.ok() && LooksLikeText(*bytes)) {
          for (std::string& c : Chunks(*bytes, chunk_chars)) s.chunks.push_back(std::move(c));
        }
      }
      if (s.chunks.empty()) continue;
      any = true;
      out.push_back(std::move(s.chunks.front()));
      s.chunks.pop_front();
      if (static_cast<int>(out.size()) >= max_prompts) break;
    }
  }
  if (out.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no text to make prompts from in ", absl::StrJoin(roots, ", ")));
  }
  return out;
}

}  // namespace semmoe::tools
