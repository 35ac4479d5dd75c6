// The OpenAI-compatible request bodies the router's HTTP frontend takes (POST /v1/completions and
// /v1/chat/completions), parsed and checked into what RouterService.Generate needs. Every field
// the API defines that we do not implement (n > 1, logprobs, echo, best_of, penalties,
// logit_bias, the deprecated `functions`, suffix, non-text response formats, non-text content
// parts) and every unknown field is refused with an ApiError naming it — never ignored.
// docs/OPENAI.md lists the fields.
#ifndef SEMMOE_ROUTER_OPENAI_OPENAI_REQUEST_H_
#define SEMMOE_ROUTER_OPENAI_OPENAI_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "router/openai/api_error.h"

namespace semmoe::router::openai {

enum class Endpoint { kCompletions, kChatCompletions };

// tool_choice: OpenAI's default is kAuto with tools, kNone without.
enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

struct OpenAiRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;  // As the client named it ("" when absent).
  // Completions: the prompt as text, or as token ids. Chat: the messages (normalised: content a
  // string or null), rendered by the caller with the model's chat template.
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  nlohmann::ordered_json messages;
  nlohmann::ordered_json template_kwargs;  // chat_template_kwargs (e.g. enable_thinking).
  bool add_generation_prompt = true;
  // Chat tool calling: the tools as sent (each {"type": "function", "function": {"name", ...}}),
  // checked, for the chat template (null: none); how the model may use them.
  nlohmann::ordered_json tools;
  ToolChoice tool_choice = ToolChoice::kNone;
  std::string tool_choice_name;  // kNamed: the function's name.
  bool parallel_tool_calls = true;
  int max_tokens = 16;  // Completions' default as OpenAI's; chat: until EOS or the limit.
  bool max_tokens_set = false;
  double temperature = 1.0;
  double top_p = 1.0;
  int top_k = 0;  // Extension (vLLM, SGLang): 0 off.
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool ignore_eos = false;  // Extension.
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage.
  std::string user;
};

// Parses the request body of `endpoint`. `served_model` is the one model name the router serves:
// a different `model` is a 404 model_not_found.
std::optional<ApiError> ParseRequest(Endpoint endpoint, const std::string& body,
                                     const std::string& served_model, OpenAiRequest* out);

}  // namespace semmoe::router::openai

#endif  // SEMMOE_ROUTER_OPENAI_OPENAI_REQUEST_H_
