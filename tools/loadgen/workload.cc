#include "tools/loadgen/workload.h"

#include "absl/strings/str_cat.h"
#include "engine/offline/jsonl.h"

namespace semmoe::tools {
namespace {

// The longest prefix of `text` of at most `limit` bytes that does not split a UTF-8 sequence.
std::string CutUtf8(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

}  // namespace

absl::StatusOr<std::vector<Prompt>> LoadPrompts(const std::string& path,
                                                const WorkloadOptions& options) {
  absl::StatusOr<std::unique_ptr<engine::offline::JsonlReader>> reader =
      engine::offline::JsonlReader::Open(path);
  if (!reader.ok()) return reader.status();
  std::vector<Prompt> out;
  nlohmann::json line;
  while (options.max_prompts <= 0 || static_cast<int>(out.size()) < options.max_prompts) {
    absl::StatusOr<bool> more = (*reader)->Next(line);
    if (!more.ok()) return more.status();
    if (!*more) break;
    Prompt p;
    const bool has_text = line.contains("text") && line["text"].is_string() &&
                          !line["text"].get<std::string>().empty();
    const bool has_ids = line.contains("token_ids");
    if (has_ids && (options.prefer_token_ids || !has_text)) {
      const nlohmann::json& ids = line["token_ids"];
      if (!ids.is_array() || ids.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat((*reader)->where(), ": \"token_ids\" must be a non-empty list"));
      }
      for (const nlohmann::json& id : ids) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
          return absl::InvalidArgumentError(absl::StrCat(
              (*reader)->where(), ": \"token_ids\" holds ", id.dump(), ", not a token id"));
        }
        p.token_ids.push_back(id.get<int32_t>());
      }
    } else if (has_text) {
      p.text = line["text"].get<std::string>();
      if (options.max_prompt_chars > 0) p.text = CutUtf8(p.text, options.max_prompt_chars);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat((*reader)->where(), ": needs a non-empty \"text\" or a \"token_ids\" list"));
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no prompts"));
  return out;
}

}  // namespace semmoe::tools
