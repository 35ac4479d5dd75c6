#include "engine/offline/jsonl.h"

#include "absl/strings/str_cat.h"
#include "common/json_fields.h"

namespace semmoe::engine::offline {

absl::StatusOr<std::unique_ptr<JsonlReader>> JsonlReader::Open(const std::string& path) {
  absl::StatusOr<std::unique_ptr<LineReader>> lines = LineReader::Open(path);
  if (!lines.ok()) return lines.status();
  return std::unique_ptr<JsonlReader>(new JsonlReader(path, std::move(*lines)));
}

std::string JsonlReader::where() const { return absl::StrCat(path_, ":", lines_->line_number()); }

absl::StatusOr<bool> JsonlReader::Next(nlohmann::json& out) {
  std::string line;
  while (true) {
    absl::StatusOr<bool> more = lines_->Next(line);
    if (!more.ok()) return more.status();
    if (!*more) return false;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (JsonNestingDepth(line) > kMaxJsonDepth) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), ": JSON nested deeper than ", kMaxJsonDepth, " levels"));
    }
    out = ParseJsonOrDiscarded(line);
    if (out.is_discarded() || !out.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(where(), ": not a JSON object"));
    }
    return true;
  }
}

absl::StatusOr<int64_t> CountJsonlLines(const std::string& path) {
  absl::StatusOr<std::unique_ptr<LineReader>> reader = LineReader::Open(path);
  if (!reader.ok()) return reader.status();
  int64_t lines = 0;
  std::string line;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(line);
    if (!more.ok()) return more.status();
    if (!*more) return lines;
    if (line.find_first_not_of(" \t\r") != std::string::npos) ++lines;
  }
}

absl::StatusOr<nlohmann::json> ReadId(const nlohmann::json& line, const std::string& where) {
  auto it = line.find("id");
  if (it == line.end() || !(it->is_string() || it->is_number_integer())) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": \"id\" (string or integer) missing"));
  }
  return *it;
}

absl::StatusOr<std::vector<int32_t>> ReadTokenIds(const nlohmann::json& line, int vocab_size,
                                                  const std::string& where) {
  auto it = line.find("token_ids");
  if (it == line.end() || !it->is_array() || it->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": \"token_ids\" must be a non-empty list of integers"));
  }
  std::vector<int32_t> ids;
  ids.reserve(it->size());
  for (const auto& v : *it) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": token id ", v.dump(), " is not an integer in [0, ", vocab_size, ")"));
    }
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

}  // namespace semmoe::engine::offline
