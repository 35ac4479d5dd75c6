// A chat request's tools meeting the model's text: the format the model writes its calls in, the
// opening the door writes after the prompt to force a call (tool_choice "required" or a named
// function), and the stream that turns the generated text into OpenAI's content and tool calls.
//
// The same ToolCallStream serves streamed and whole responses, so both give the same content and
// calls. White space between and after calls is not content (the templates put newlines there);
// content before a call, or after the last, is. A call that does not parse is content
// (tool_calls.h), the forced opening included when the door wrote one.
#ifndef SEMMOE_ROUTER_OPENAI_TOOL_USE_H_
#define SEMMOE_ROUTER_OPENAI_TOOL_USE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "router/openai/openai_request.h"
#include "router/openai/openai_response.h"
#include "router/openai/tool_calls.h"

namespace semmoe::router::openai {

// "hermes", "deepseek_v3", "mistral" (the names vLLM's --tool-call-parser uses).
absl::StatusOr<ToolCallFormat> ToolCallFormatFromName(absl::string_view name);
const char* ToolCallFormatName(ToolCallFormat format);

// What the door appends to the rendered prompt: for kRequired the call's begin marker, for kNamed
// the marker and the function's name up to its arguments; "" for kAuto and kNone.
std::string ForcedOpening(ToolCallFormat format, ToolChoice choice, const std::string& name);

class ToolCallStream {
 public:
  struct Out {
    std::string content;
    std::vector<ResponseToolCall> calls;
  };

  // `opening`: ForcedOpening's text (read before the generated text, as the model did).
  // `parallel` false: calls after the first are dropped (parallel_tool_calls: false).
  ToolCallStream(ToolCallFormat format, std::string opening, bool parallel,
                 std::string request_id);

  Out Feed(absl::string_view text);
  // The end of the generation.
  Out Finish();
  int calls() const { return next_index_; }

 private:
  Out Take(ToolCallPiece piece, bool final);

  ToolCallParser parser_;
  const bool parallel_;
  const std::string request_id_;
  std::string blank_;  // White space not yet said: content only if more content follows.
  bool after_call_ = false;  // The last thing seen was a call.
  int next_index_ = 0;  // The next call's index (ids are "call_<request id>_<index>").
};

}  // namespace semmoe::router::openai

#endif  // SEMMOE_ROUTER_OPENAI_TOOL_USE_H_
