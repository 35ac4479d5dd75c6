#include "router/openai/tool_calls.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "common/json_fields.h"
#include "nlohmann/json.hpp"

namespace semmoe::router::openai {
namespace {

struct Markers {
  const char* begin;
  const char* end;  // nullptr: the call runs to the end of a JSON array (Mistral).
  std::vector<const char*> dropped;  // Said by the model around calls, not content.
};

const Markers& MarkersOf(ToolCallFormat f) {
  static const Markers hermes{"<tool_call>", "</tool_call>", {}};
  static const Markers deepseek{"<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
                                {"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"}};
  static const Markers mistral{"[TOOL_CALLS]", nullptr, {}};
  switch (f) {
    case ToolCallFormat::kHermes:
      return hermes;
    case ToolCallFormat::kDeepseekV3:
      return deepseek;
    case ToolCallFormat::kMistral:
      return mistral;
  }
  return hermes;
}

// The arguments as OpenAI carries them: JSON text of an object. A string is taken as that text
// when it parses (some templates emit it so).
bool ArgumentsText(const nlohmann::json& j, std::string& out) {
  if (j.is_null()) {
    out = "{}";
    return true;
  }
  if (j.is_object()) {
    out = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return true;
  }
  if (const std::string* text = j.get_ptr<const std::string*>()) {
    const nlohmann::json inner = ParseJsonOrDiscarded(*text);  // Depth-bounded, never throws.
    if (inner.is_discarded() || !inner.is_object()) return false;
    out = inner.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return true;
  }
  return false;
}

// {"name": "f", "arguments": {...}}
bool NamedCall(const nlohmann::json& j, std::vector<ToolCall>& found) {
  if (!j.is_object() || !j.contains("name")) return false;
  const std::string* name = j["name"].get_ptr<const std::string*>();
  if (name == nullptr) return false;
  ToolCall call{*name, ""};
  if (call.name.empty()) return false;
  const nlohmann::json args = j.contains("arguments") ? j["arguments"]
                              : j.contains("parameters") ? j["parameters"]
                                                         : nlohmann::json();
  if (!ArgumentsText(args, call.arguments)) return false;
  found.push_back(std::move(call));
  return true;
}

// Where the JSON array at the start of `s` (after white space) ends, one past its ']'; npos when
// it does not end in `s` (or `s` does not start with one).
size_t ArrayEnd(absl::string_view s) {
  size_t i = 0;
  while (i < s.size() && absl::ascii_isspace(static_cast<unsigned char>(s[i]))) ++i;
  if (i == s.size() || s[i] != '[') return absl::string_view::npos;
  int depth = 0;
  bool in_string = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      if (--depth == 0) return i + 1;
    }
  }
  return absl::string_view::npos;
}

}  // namespace

bool ToolCallParser::ParseBody(absl::string_view body, std::vector<ToolCall>& found) const {
  switch (format_) {
    case ToolCallFormat::kHermes:
      return NamedCall(ParseJsonOrDiscarded(body), found);
    case ToolCallFormat::kMistral: {
      const nlohmann::json j = ParseJsonOrDiscarded(body);
      if (!j.is_array() || j.empty()) return false;
      for (const nlohmann::json& call : j) {
        if (!NamedCall(call, found)) return false;
      }
      return true;
    }
    case ToolCallFormat::kDeepseekV3: {
      // function<｜tool▁sep｜>NAME\n```json\nARGUMENTS\n```
      const absl::string_view sep = "<｜tool▁sep｜>";
      const size_t at = body.find(sep);
      if (at == absl::string_view::npos) return false;
      if (absl::StripAsciiWhitespace(body.substr(0, at)) != "function") return false;
      absl::string_view rest = body.substr(at + sep.size());
      const size_t newline = rest.find('\n');
      if (newline == absl::string_view::npos) return false;
      ToolCall call{std::string(absl::StripAsciiWhitespace(rest.substr(0, newline))), ""};
      absl::string_view args = absl::StripAsciiWhitespace(rest.substr(newline + 1));
      if (absl::ConsumePrefix(&args, "```json") || absl::ConsumePrefix(&args, "```")) {
        if (!absl::ConsumeSuffix(&args, "```")) return false;
      }
      const nlohmann::json j = ParseJsonOrDiscarded(args);
      if (call.name.empty() || j.is_discarded() || !ArgumentsText(j, call.arguments)) return false;
      found.push_back(std::move(call));
      return true;
    }
  }
  return false;
}

void ToolCallParser::Scan(ToolCallPiece& out, bool final) {
  const Markers& m = MarkersOf(format_);
  const absl::string_view begin = m.begin;
  while (!buffer_.empty()) {
    if (!in_call_) {
      // The first marker in the text: content before it; a dropped one goes, a begin opens a call.
      size_t first = std::string::npos, length = 0;
      bool opens = false;
      auto consider = [&](absl::string_view marker, bool is_begin) {
        const size_t at = buffer_.find(marker.data(), 0, marker.size());
        if (at < first) first = at, length = marker.size(), opens = is_begin;
      };
      consider(begin, true);
      for (const char* d : m.dropped) consider(d, false);
      if (first != std::string::npos) {
        out.content += buffer_.substr(0, first);
        buffer_.erase(0, opens ? first : first + length);
        in_call_ = opens;
        continue;
      }
      // No marker: say everything but a tail that may be one's start.
      size_t hold = 0;
      if (!final) {
        auto held = [&](absl::string_view marker) {
          for (size_t n = std::min(marker.size() - 1, buffer_.size()); n > hold; --n) {
            if (absl::EndsWith(buffer_, marker.substr(0, n))) {
              hold = n;
              break;
            }
          }
        };
        held(begin);
        for (const char* d : m.dropped) held(d);
      }
      out.content += buffer_.substr(0, buffer_.size() - hold);
      buffer_.erase(0, buffer_.size() - hold);
      return;
    }
    // In a call: buffer_ starts with the begin marker.
    const absl::string_view body_and_more = absl::string_view(buffer_).substr(begin.size());
    size_t body_end = absl::string_view::npos, consumed = 0;
    if (m.end != nullptr) {
      body_end = body_and_more.find(m.end);
      if (body_end != absl::string_view::npos) consumed = body_end + std::strlen(m.end);
    } else {
      body_end = ArrayEnd(body_and_more);
      consumed = body_end;
    }
    if (body_end == absl::string_view::npos) {
      if (final) {  // Cut off: what the model said, as content.
        out.content += buffer_;
        buffer_.clear();
        in_call_ = false;
      }
      return;
    }
    std::vector<ToolCall> found;
    if (ParseBody(body_and_more.substr(0, body_end), found)) {
      for (ToolCall& call : found) {
        out.calls.push_back({static_cast<int>(calls_.size()), call, out.content.size()});
        calls_.push_back(std::move(call));
      }
    } else {
      out.content += buffer_.substr(0, begin.size() + consumed);
    }
    buffer_.erase(0, begin.size() + consumed);
    in_call_ = false;
  }
}

ToolCallPiece ToolCallParser::Feed(absl::string_view text) {
  buffer_.append(text.data(), text.size());
  ToolCallPiece out;
  Scan(out, /*final=*/false);
  return out;
}

ToolCallPiece ToolCallParser::Finish() {
  ToolCallPiece out;
  Scan(out, /*final=*/true);
  return out;
}

ToolCallPiece ParseToolCalls(ToolCallFormat format, absl::string_view text) {
  ToolCallParser parser(format);
  ToolCallPiece out = parser.Feed(text);
  ToolCallPiece rest = parser.Finish();
  const size_t said = out.content.size();
  out.content += rest.content;
  for (auto& c : rest.calls) {
    c.at += said;
    out.calls.push_back(std::move(c));
  }
  return out;
}

}  // namespace semmoe::router::openai
