#include "router/openai/openai_response.h"

#include "absl/strings/str_cat.h"

namespace semmoe::router::openai {
namespace {

using Json = nlohmann::ordered_json;

bool Chat(const ResponseHeader& h) { return h.endpoint == Endpoint::kChatCompletions; }

Json Base(const ResponseHeader& h, bool chunk) {
  return {{"id", h.id},
          {"object",
           Chat(h) ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", h.created},
          {"model", h.model}};
}

Json UsageJson(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

}  // namespace

std::string FinishReason(const std::string& engine_reason, bool made_tool_calls) {
  if (engine_reason == "length") return "length";
  return made_tool_calls ? "tool_calls" : "stop";
}

std::string ResponseId(Endpoint endpoint, const std::string& request_id) {
  return absl::StrCat(endpoint == Endpoint::kChatCompletions ? "chatcmpl-" : "cmpl-", request_id);
}

Json FullResponse(const ResponseHeader& h, const std::string& text,
                  const std::string& finish_reason, const Usage& usage,
                  const std::vector<ResponseToolCall>& tool_calls) {
  Json r = Base(h, /*chunk=*/false);
  Json choice = {{"index", 0}};
  if (Chat(h)) {
    Json message = {{"role", "assistant"},
                    {"content", text.empty() && !tool_calls.empty() ? Json() : Json(text)}};
    if (!tool_calls.empty()) {
      message["tool_calls"] = Json::array();
      for (const ResponseToolCall& c : tool_calls) {
        message["tool_calls"].push_back(
            {{"id", c.id},
             {"type", "function"},
             {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      }
    }
    choice["message"] = std::move(message);
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_reason;
  r["choices"] = Json::array({choice});
  r["usage"] = UsageJson(usage);
  return r;
}

Json Chunk(const ResponseHeader& h, const std::string& text, const std::string& finish_reason,
           bool first, bool include_usage) {
  Json r = Base(h, /*chunk=*/true);
  Json choice = {{"index", 0}};
  if (Chat(h)) {
    Json delta = Json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || (first && finish_reason.empty())) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_reason.empty() ? Json() : Json(finish_reason);
  r["choices"] = Json::array({choice});
  if (include_usage) r["usage"] = nullptr;
  return r;
}

std::vector<Json> ToolCallChunks(const ResponseHeader& h, const ResponseToolCall& call,
                                 bool include_usage) {
  auto chunk = [&](Json tool_call) {
    Json r = Base(h, /*chunk=*/true);
    Json choice = {{"index", 0},
                   {"delta", {{"tool_calls", Json::array({std::move(tool_call)})}}},
                   {"logprobs", nullptr},
                   {"finish_reason", nullptr}};
    r["choices"] = Json::array({std::move(choice)});
    if (include_usage) r["usage"] = nullptr;
    return r;
  };
  return {chunk({{"index", call.index},
                 {"id", call.id},
                 {"type", "function"},
                 {"function", {{"name", call.name}, {"arguments", ""}}}}),
          chunk({{"index", call.index}, {"function", {{"arguments", call.arguments}}}})};
}

Json UsageChunk(const ResponseHeader& h, const Usage& usage) {
  Json r = Base(h, /*chunk=*/true);
  r["choices"] = Json::array();
  r["usage"] = UsageJson(usage);
  return r;
}

// Responses carry text the engine decoded; a byte sequence that is not UTF-8 must not make the
// JSON writer throw.
std::string JsonText(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string SseEvent(const Json& data) { return absl::StrCat("data: ", JsonText(data), "\n\n"); }

}  // namespace semmoe::router::openai
