// The OpenAI-compatible response bodies: whole completions, streamed chunks (server-sent events),
// usage, and the mapping of the engine's finish reasons.
#ifndef SEMMOE_ROUTER_OPENAI_OPENAI_RESPONSE_H_
#define SEMMOE_ROUTER_OPENAI_OPENAI_RESPONSE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "router/openai/openai_request.h"

namespace semmoe::router::openai {

// What every object of one response shares.
struct ResponseHeader {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string id;       // "cmpl-…" / "chatcmpl-…"
  int64_t created = 0;  // Unix seconds.
  std::string model;
};

// One tool call as a response carries it.
struct ResponseToolCall {
  int index = 0;  // Among the response's calls.
  std::string id;
  std::string name;
  std::string arguments;  // JSON text of an object.
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// The engine's "eos" and "stop" are OpenAI's "stop" — or "tool_calls" when the answer made
// calls; "length" stays.
std::string FinishReason(const std::string& engine_reason, bool made_tool_calls = false);

// The response id for a router request id.
std::string ResponseId(Endpoint endpoint, const std::string& request_id);

// A non-streamed response: "text_completion" or "chat.completion" with its usage. Chat with
// `tool_calls`: the message carries them, and content null when there is none.
nlohmann::ordered_json FullResponse(const ResponseHeader& h, const std::string& text,
                                    const std::string& finish_reason, const Usage& usage,
                                    const std::vector<ResponseToolCall>& tool_calls = {});

// One streamed chunk: `text` new text, `finish_reason` "" until the last; chat's first chunk
// carries the assistant role (`first`). With include_usage every chunk has "usage": null.
nlohmann::ordered_json Chunk(const ResponseHeader& h, const std::string& text,
                             const std::string& finish_reason, bool first, bool include_usage);
// A tool call streamed as OpenAI streams one: a chunk with its index, id, type and name (and
// arguments ""), then one with its arguments.
std::vector<nlohmann::ordered_json> ToolCallChunks(const ResponseHeader& h,
                                                   const ResponseToolCall& call,
                                                   bool include_usage);
// The closing usage chunk (stream_options.include_usage): no choices.
nlohmann::ordered_json UsageChunk(const ResponseHeader& h, const Usage& usage);

// JSON text of a response body; text that is not UTF-8 is replaced, never thrown on.
std::string JsonText(const nlohmann::ordered_json& j);

// "data: <json>\n\n" — one server-sent event.
std::string SseEvent(const nlohmann::ordered_json& data);
inline constexpr char kSseDone[] = "data: [DONE]\n\n";

}  // namespace semmoe::router::openai

#endif  // SEMMOE_ROUTER_OPENAI_OPENAI_RESPONSE_H_
