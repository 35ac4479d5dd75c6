#include "router/http/testing/scripted_router.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace semmoe::router::testing {
namespace {

class NoCancel : public CallHandle {
 public:
  void Cancel() override {}
};

struct Markers {
  std::string calls;                       // Both calls, in the format.
  std::string result_begin, result_end;    // Around each tool result in the rendered prompt.
};

Markers MarkersOf(openai::ToolCallFormat format) {
  const std::string paris = R"({"city": "Paris"})", tokyo = R"({"city": "Tokyo"})";
  switch (format) {
    case openai::ToolCallFormat::kHermes:
      return {absl::StrCat("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ", paris,
                           "}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", "
                           "\"arguments\": ",
                           tokyo, "}\n</tool_call>"),
              "<tool_response>\n", "\n</tool_response>"};
    case openai::ToolCallFormat::kDeepseekV3: {
      auto call = [](const std::string& args) {
        return absl::StrCat("<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n", args,
                            "\n```<｜tool▁call▁end｜>");
      };
      return {absl::StrCat("<｜tool▁calls▁begin｜>", call(paris), "\n", call(tokyo),
                           "<｜tool▁calls▁end｜>"),
              "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>"};
    }
    case openai::ToolCallFormat::kMistral:
      return {absl::StrCat("[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": ", paris,
                           "}, {\"name\": \"get_weather\", \"arguments\": ", tokyo, "}]"),
              "[TOOL_RESULTS]", "[/TOOL_RESULTS]"};
  }
  return {};
}

// The longest start of `answer` that `prompt` ends with.
size_t Overlap(const std::string& prompt, const std::string& answer) {
  for (size_t n = std::min(prompt.size(), answer.size()); n > 0; --n) {
    if (absl::EndsWith(prompt, absl::string_view(answer).substr(0, n))) return n;
  }
  return 0;
}

}  // namespace

std::string WeatherAgent(openai::ToolCallFormat format, const std::string& prompt) {
  const Markers m = MarkersOf(format);
  std::vector<std::string> results;
  for (size_t at = prompt.find(m.result_begin); at != std::string::npos;
       at = prompt.find(m.result_begin, at)) {
    at += m.result_begin.size();
    const size_t end = prompt.find(m.result_end, at);
    if (end == std::string::npos) break;
    results.push_back(prompt.substr(at, end - at));
  }
  if (!results.empty()) return absl::StrCat("Results: ", absl::StrJoin(results, "; "));
  return m.calls.substr(Overlap(prompt, m.calls));
}

absl::StatusOr<std::shared_ptr<CallHandle>> ScriptedRouter::Submit(
    const rpc::GenerateRequest& request, std::optional<absl::Time>,
    std::shared_ptr<CallSink> sink) {
  {
    absl::MutexLock lock(&mu_);
    prompts_.push_back(request.text());
  }
  const std::string text = script_(request.text());
  std::string said;
  int tokens = 0;
  for (size_t at = 0; at < text.size() && tokens < request.max_tokens(); ++tokens) {
    size_t end = std::min(text.size(), at + piece_bytes_);
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    const int32_t id = tokens;
    sink->OnTokens(absl::MakeConstSpan(&id, 1), absl::string_view(text).substr(at, end - at));
    said.append(text, at, end - at);
    at = end;
  }
  rpc::FinalRecord final;
  final.set_request_id(request.request_id());
  final.set_prompt_tokens(static_cast<int32_t>(request.text().size()));
  final.set_completion_tokens(tokens);
  final.set_finish_reason(said.size() < text.size() ? "length" : "eos");
  final.set_text(said);
  sink->OnEnd(absl::OkStatus(), &final);
  return std::make_shared<NoCancel>();
}

rpc::RouterStats ScriptedRouter::Stats() const {
  rpc::RouterStats s;
  s.add_ranks()->set_usable(true);
  return s;
}

std::vector<std::string> ScriptedRouter::prompts() const {
  absl::MutexLock lock(&mu_);
  return prompts_;
}

}  // namespace semmoe::router::testing
