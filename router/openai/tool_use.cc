#include "router/openai/tool_use.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace semmoe::router::openai {

absl::StatusOr<ToolCallFormat> ToolCallFormatFromName(absl::string_view name) {
  if (name == "hermes") return ToolCallFormat::kHermes;
  if (name == "deepseek_v3") return ToolCallFormat::kDeepseekV3;
  if (name == "mistral") return ToolCallFormat::kMistral;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown tool-call format '", name, "' (known: hermes, deepseek_v3, mistral)"));
}

const char* ToolCallFormatName(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kDeepseekV3:
      return "deepseek_v3";
    case ToolCallFormat::kMistral:
      return "mistral";
  }
  return "?";
}

std::string ForcedOpening(ToolCallFormat format, ToolChoice choice, const std::string& name) {
  if (choice != ToolChoice::kRequired && choice != ToolChoice::kNamed) return "";
  const bool named = choice == ToolChoice::kNamed;
  // The name is one of the request's tools (1-64 of [A-Za-z0-9_-]): nothing to escape.
  switch (format) {
    case ToolCallFormat::kHermes:
      return named ? absl::StrCat("<tool_call>\n{\"name\": \"", name, "\", \"arguments\": ")
                   : "<tool_call>\n";
    case ToolCallFormat::kDeepseekV3:
      return absl::StrCat("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>",
                          named ? absl::StrCat(name, "\n```json\n") : "");
    case ToolCallFormat::kMistral:
      return named ? absl::StrCat("[TOOL_CALLS] [{\"name\": \"", name, "\", \"arguments\": ")
                   : "[TOOL_CALLS] [";
  }
  return "";
}

ToolCallStream::ToolCallStream(ToolCallFormat format, std::string opening, bool parallel,
                               std::string request_id)
    : parser_(format), parallel_(parallel), request_id_(std::move(request_id)) {
  // The opening starts a call: the parser holds it (it says nothing) until the call ends.
  if (!opening.empty()) parser_.Feed(opening);
}

ToolCallStream::Out ToolCallStream::Feed(absl::string_view text) {
  return Take(parser_.Feed(text), /*final=*/false);
}

ToolCallStream::Out ToolCallStream::Finish() { return Take(parser_.Finish(), /*final=*/true); }

ToolCallStream::Out ToolCallStream::Take(ToolCallPiece piece, bool final) {
  Out out;
  auto say = [&](absl::string_view text) {
    if (after_call_) {  // White space right after a call is the template's.
      text = absl::StripLeadingAsciiWhitespace(text);
      if (text.empty()) return;
      after_call_ = false;
    }
    if (text.empty()) return;
    if (absl::StripAsciiWhitespace(text).empty()) {
      blank_.append(text.data(), text.size());
      return;
    }
    // White space the text starts or ends with may be the template's around a call: held.
    const size_t end = text.find_last_not_of(" \t\r\n") + 1;
    absl::StrAppend(&out.content, blank_, text.substr(0, end));
    blank_ = std::string(text.substr(end));
  };
  size_t said = 0;
  for (ToolCallPiece::Call& c : piece.calls) {
    say(absl::string_view(piece.content).substr(said, c.at - said));
    said = c.at;
    blank_.clear();  // White space before a call is the template's, not content.
    after_call_ = true;
    if (!parallel_ && next_index_ > 0) continue;
    out.calls.push_back({.index = next_index_,
                         .id = absl::StrCat("call_", request_id_, "_", next_index_),
                         .name = std::move(c.call.name),
                         .arguments = std::move(c.call.arguments)});
    ++next_index_;
  }
  say(absl::string_view(piece.content).substr(said));
  if (final) {
    if (next_index_ == 0) out.content += blank_;  // No calls: the text as it was.
    blank_.clear();
  }
  return out;
}

}  // namespace semmoe::router::openai
