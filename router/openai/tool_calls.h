// Tool calls in a model's generated text, in the formats the models' own chat templates teach:
//
//   kHermes (Qwen3, Qwen2.5):  <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//   kDeepseekV3:  <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{...}\n```
//                 <｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
//   kMistral (Mixtral, Mistral):  [TOOL_CALLS] [{"name": "f", "arguments": {...}}, ...]
//
// ToolCallParser takes the text as it is generated (a stream's deltas, or the whole completion
// at once) and splits it into content and calls: content streams out at once except a tail that
// may be the start of a marker; a call comes out whole once its end is seen (its name and its
// arguments as one fragment). A call that does not parse, or is cut off by the end of the
// generation, comes back as content, markers included — never an error.
#ifndef SEMMOE_ROUTER_OPENAI_TOOL_CALLS_H_
#define SEMMOE_ROUTER_OPENAI_TOOL_CALLS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace semmoe::router::openai {

enum class ToolCallFormat { kHermes, kDeepseekV3, kMistral };

struct ToolCall {
  std::string name;
  std::string arguments;  // The arguments object as JSON text (OpenAI's function.arguments).
};

// What can be said after a Feed or Finish: content, then the calls completed (index: their
// position among the response's calls).
struct ToolCallPiece {
  std::string content;
  struct Call {
    int index = 0;
    ToolCall call;
    size_t at = 0;  // Where in `content` the call came (content[0, at) was said before it).
  };
  std::vector<Call> calls;
};

class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallFormat format) : format_(format) {}

  ToolCallPiece Feed(absl::string_view text);
  // The end of the generation: what was held back comes out as content (a marker's start that
  // was not one, an unfinished call).
  ToolCallPiece Finish();

  // Every call so far, in order.
  const std::vector<ToolCall>& calls() const { return calls_; }

 private:
  void Scan(ToolCallPiece& out, bool final);
  bool ParseBody(absl::string_view body, std::vector<ToolCall>& found) const;

  ToolCallFormat format_;
  std::string buffer_;   // Text not yet said.
  bool in_call_ = false;  // buffer_ starts with a call's begin marker.
  std::vector<ToolCall> calls_;
};

// The whole completion: Feed(text) then Finish().
ToolCallPiece ParseToolCalls(ToolCallFormat format, absl::string_view text);

}  // namespace semmoe::router::openai

#endif  // SEMMOE_ROUTER_OPENAI_TOOL_CALLS_H_
