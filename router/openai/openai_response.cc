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

std::string FinishReason(const std::string& engine_reason) {
  return engine_reason == "length" ? "length" : "stop";
}

std::string ResponseId(Endpoint endpoint, const std::string& request_id) {
  return absl::StrCat(endpoint == Endpoint::kChatCompletions ? "chatcmpl-" : "cmpl-", request_id);
}

Json FullResponse(const ResponseHeader& h, const std::string& text,
                  const std::string& finish_reason, const Usage& usage) {
  Json r = Base(h, /*chunk=*/false);
  Json choice = {{"index", 0}};
  if (Chat(h)) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
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
