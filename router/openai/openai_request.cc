#include "router/openai/openai_request.h"

#include <cmath>
#include <functional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json_fields.h"

namespace semmoe::router::openai {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxJsonDepth = 64;
constexpr int kMaxStops = 16;

ApiError Invalid(const std::string& param, const std::string& message) {
  return ApiError{.http_status = 400, .message = message, .param = param};
}

ApiError Unsupported(const std::string& param, const std::string& what) {
  return ApiError{.http_status = 400,
                  .message = absl::StrCat(what, " is not supported by this server"),
                  .param = param,
                  .code = "unsupported_parameter"};
}

bool IsNull(const Json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null();
}

std::optional<ApiError> Number(const Json& body, const char* key, double lo, double hi,
                               double* out) {
  if (IsNull(body, key)) return std::nullopt;
  const Json& v = body.at(key);
  if (!v.is_number()) return Invalid(key, absl::StrCat("'", key, "' must be a number"));
  const double d = v.get<double>();
  if (!(d >= lo && d <= hi)) {
    return Invalid(key, absl::StrCat("'", key, "' must be between ", lo, " and ", hi, ", got ", d));
  }
  *out = d;
  return std::nullopt;
}

std::optional<ApiError> Int(const Json& body, const char* key, int64_t lo, int64_t hi,
                            int64_t* out) {
  if (IsNull(body, key)) return std::nullopt;
  const Json& v = body.at(key);
  if (!v.is_number_integer() && !v.is_number_unsigned()) {
    return Invalid(key, absl::StrCat("'", key, "' must be an integer"));
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return Invalid(key, absl::StrCat("'", key, "' is out of range"));
  }
  const int64_t i = v.get<int64_t>();
  if (i < lo || i > hi) {
    return Invalid(key, absl::StrCat("'", key, "' must be between ", lo, " and ", hi, ", got ", i));
  }
  *out = i;
  return std::nullopt;
}

// Fields OpenAI defines that we do not implement: accepted only at the value that means "off".
std::optional<ApiError> CheckUnsupported(const Json& body, Endpoint endpoint) {
  auto off = [&](const char* key, const std::function<bool(const Json&)>& is_off,
                 const std::string& what) -> std::optional<ApiError> {
    if (IsNull(body, key) || is_off(body.at(key))) return std::nullopt;
    return Unsupported(key, what);
  };
  auto is_false = [](const Json& v) { return v.is_boolean() && !v.get<bool>(); };
  auto is_zero = [](const Json& v) { return v.is_number() && v.get<double>() == 0; };
  auto is_one = [](const Json& v) { return v.is_number_integer() && v.get<int64_t>() == 1; };
  auto is_empty = [](const Json& v) { return (v.is_object() || v.is_array()) && v.empty(); };
  const bool chat = endpoint == Endpoint::kChatCompletions;
  std::optional<ApiError> e;
  if ((e = off("n", is_one, "'n' other than 1 (several choices per request)"))) return e;
  if (chat) {
    if ((e = off("logprobs", is_false, "'logprobs'"))) return e;
    if ((e = off("top_logprobs", is_zero, "'top_logprobs'"))) return e;
  } else {
    if ((e = off(
             "logprobs", [](const Json&) { return false; }, "'logprobs'")))
      return e;
    if ((e = off("echo", is_false, "'echo'"))) return e;
    if ((e = off("best_of", is_one, "'best_of' other than 1"))) return e;
    if ((e = off(
             "suffix", [](const Json& v) { return v.is_string() && v.empty(); },
             "'suffix' (insertion)"))) {
      return e;
    }
  }
  if ((e = off("presence_penalty", is_zero, "'presence_penalty'"))) return e;
  if ((e = off("frequency_penalty", is_zero, "'frequency_penalty'"))) return e;
  if ((e = off("logit_bias", is_empty, "'logit_bias'"))) return e;
  if (!chat) {
    for (const char* key : {"tools", "tool_choice", "parallel_tool_calls"}) {
      if (!IsNull(body, key)) {
        return Invalid(key, absl::StrCat("'", key, "' is for chat completions (/v1/chat/completions)"));
      }
    }
  }
  // The deprecated pre-tools fields: their requests name `tools` instead.
  if ((e = off("functions", is_empty, "the deprecated 'functions' (send 'tools')"))) return e;
  if ((e = off(
           "function_call", [](const Json& v) { return v == "none"; },
           "the deprecated 'function_call' (send 'tool_choice')"))) {
    return e;
  }
  if ((e = off(
           "response_format",
           [](const Json& v) { return v.is_object() && v.value("type", "") == "text"; },
           "'response_format' other than {\"type\": \"text\"}"))) {
    return e;
  }
  return std::nullopt;
}

// A message's content: a string, null, or text parts (joined with "\n", as vLLM does).
std::optional<ApiError> NormaliseContent(Json& message, size_t index) {
  const std::string param = absl::StrCat("messages[", index, "].content");
  auto it = message.find("content");
  if (it == message.end() || it->is_null() || it->is_string()) return std::nullopt;
  if (!it->is_array()) return Invalid(param, "content must be a string or an array of parts");
  std::vector<std::string> texts;
  for (const Json& part : *it) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return Invalid(param, "each content part must be an object with a \"type\"");
    }
    const std::string type = part["type"].get<std::string>();
    if (type != "text") return Unsupported(param, absl::StrCat("content part type '", type, "'"));
    if (!part.contains("text") || !part["text"].is_string()) {
      return Invalid(param, "a text part needs a string \"text\"");
    }
    texts.push_back(part["text"].get<std::string>());
  }
  *it = absl::StrJoin(texts, "\n");
  return std::nullopt;
}

bool IsString(const Json& object, const char* key) {
  return object.contains(key) && object.at(key).is_string();
}

// OpenAI's function names: 1-64 of [A-Za-z0-9_-].
bool ValidFunctionName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

// An assistant message's `tool_calls` (each {"id", "type": "function", "function": {"name",
// "arguments": a JSON string}}) and a tool message's `tool_call_id`.
std::optional<ApiError> CheckToolFields(const Json& m, const std::string& param) {
  const std::string role = m["role"].get<std::string>();
  if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
    const std::string p = param + ".tool_calls";
    if (role != "assistant") return Invalid(p, "only assistant messages carry 'tool_calls'");
    if (!m["tool_calls"].is_array()) return Invalid(p, "'tool_calls' must be an array");
    for (size_t j = 0; j < m["tool_calls"].size(); ++j) {
      const Json& call = m["tool_calls"][j];
      const std::string pj = absl::StrCat(p, "[", j, "]");
      if (!call.is_object() || !IsString(call, "id") || call.value("type", Json()) != "function" ||
          !call.contains("function") || !call["function"].is_object() ||
          !IsString(call["function"], "name") || !IsString(call["function"], "arguments")) {
        return Invalid(pj,
                       "a tool call must be {\"id\": string, \"type\": \"function\", \"function\": "
                       "{\"name\": string, \"arguments\": string}}");
      }
    }
  }
  if (role == "tool" && !IsString(m, "tool_call_id")) {
    return Invalid(param + ".tool_call_id", "a tool message needs a string 'tool_call_id'");
  }
  return std::nullopt;
}

// `tools`, `tool_choice` and `parallel_tool_calls` of a chat request.
std::optional<ApiError> ParseTools(const Json& body, OpenAiRequest* out) {
  std::set<std::string> names;
  if (!IsNull(body, "tools")) {
    const Json& tools = body.at("tools");
    if (!tools.is_array()) return Invalid("tools", "'tools' must be an array");
    static const std::set<std::string> kFunctionKeys = {"name", "description", "parameters",
                                                        "strict"};
    for (size_t i = 0; i < tools.size(); ++i) {
      const Json& tool = tools[i];
      const std::string p = absl::StrCat("tools[", i, "]");
      if (!tool.is_object() || !IsString(tool, "type")) {
        return Invalid(p, "a tool must be {\"type\": \"function\", \"function\": {...}}");
      }
      if (tool["type"] != "function") {
        return Unsupported(p + ".type",
                           absl::StrCat("tool type '", tool["type"].get<std::string>(), "'"));
      }
      for (const auto& [key, unused] : tool.items()) {
        if (key != "type" && key != "function") {
          return Invalid(p, absl::StrCat("unrecognized tool field '", key, "'"));
        }
      }
      if (!tool.contains("function") || !tool["function"].is_object()) {
        return Invalid(p + ".function", "a function tool needs a 'function' object");
      }
      const Json& f = tool["function"];
      for (const auto& [key, unused] : f.items()) {
        if (!kFunctionKeys.count(key)) {
          return Invalid(p + ".function", absl::StrCat("unrecognized function field '", key, "'"));
        }
      }
      if (!IsString(f, "name") || !ValidFunctionName(f["name"].get<std::string>())) {
        return Invalid(p + ".function.name",
                       "a function's name must be 1 to 64 letters, digits, '_' or '-'");
      }
      if (!names.insert(f["name"].get<std::string>()).second) {
        return Invalid(p + ".function.name",
                       absl::StrCat("two tools are named '", f["name"].get<std::string>(), "'"));
      }
      if (f.contains("description") && !f["description"].is_string()) {
        return Invalid(p + ".function.description", "'description' must be a string");
      }
      if (f.contains("parameters") && !f["parameters"].is_object()) {
        return Invalid(p + ".function.parameters", "'parameters' must be a JSON Schema object");
      }
      if (f.contains("strict") && !f["strict"].is_boolean()) {
        return Invalid(p + ".function.strict", "'strict' must be a boolean");
      }
      if (f.value("strict", false)) {
        // Strict mode promises arguments that match the schema: that needs constrained decoding.
        return Unsupported(p + ".function.strict", "'strict': true (schema-constrained arguments)");
      }
    }
    if (!tools.empty()) out->tools = tools;
  }
  const bool have_tools = !out->tools.is_null();
  out->tool_choice = have_tools ? ToolChoice::kAuto : ToolChoice::kNone;
  if (!IsNull(body, "tool_choice")) {
    const Json& c = body.at("tool_choice");
    if (c == "none") {
      out->tool_choice = ToolChoice::kNone;
    } else if (c == "auto" || c == "required") {
      out->tool_choice = c == "auto" ? ToolChoice::kAuto : ToolChoice::kRequired;
    } else if (c.is_object() && c.value("type", Json()) == "function" && c.contains("function") &&
               c["function"].is_object() && IsString(c["function"], "name")) {
      out->tool_choice = ToolChoice::kNamed;
      out->tool_choice_name = c["function"]["name"].get<std::string>();
      if (!names.count(out->tool_choice_name)) {
        return Invalid("tool_choice", absl::StrCat("tool_choice names '", out->tool_choice_name,
                                                   "', which is not in 'tools'"));
      }
    } else {
      return Invalid("tool_choice",
                     "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": "
                     "\"function\", \"function\": {\"name\": ...}}");
    }
    if (out->tool_choice != ToolChoice::kNone && !have_tools) {
      return Invalid("tool_choice", "'tool_choice' other than \"none\" needs 'tools'");
    }
  }
  if (!IsNull(body, "parallel_tool_calls")) {
    if (!body.at("parallel_tool_calls").is_boolean()) {
      return Invalid("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
    }
    out->parallel_tool_calls = body.at("parallel_tool_calls").get<bool>();
  }
  return std::nullopt;
}

std::optional<ApiError> ParseMessages(const Json& body, OpenAiRequest* out) {
  if (IsNull(body, "messages")) return Invalid("messages", "'messages' is required");
  const Json& messages = body.at("messages");
  if (!messages.is_array() || messages.empty()) {
    return Invalid("messages", "'messages' must be a non-empty array");
  }
  static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
  out->messages = Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    Json m = messages[i];
    const std::string param = absl::StrCat("messages[", i, "]");
    if (!m.is_object()) return Invalid(param, "each message must be an object");
    if (!m.contains("role") || !m["role"].is_string() ||
        !kRoles.count(m["role"].get<std::string>())) {
      return Invalid(param + ".role",
                     "role must be one of system, developer, user, assistant, tool");
    }
    if (std::optional<ApiError> e = NormaliseContent(m, i)) return e;
    if (std::optional<ApiError> e = CheckToolFields(m, param)) return e;
    const bool has_calls = m.contains("tool_calls") && !m["tool_calls"].is_null();
    if (m.value("content", Json()).is_null() && !(m["role"] == "assistant" && has_calls)) {
      return Invalid(param + ".content", "content is required");
    }
    out->messages.push_back(std::move(m));
  }
  if (!IsNull(body, "chat_template_kwargs")) {
    if (!body.at("chat_template_kwargs").is_object()) {
      return Invalid("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    }
    out->template_kwargs = body.at("chat_template_kwargs");
  }
  if (!IsNull(body, "add_generation_prompt")) {
    if (!body.at("add_generation_prompt").is_boolean()) {
      return Invalid("add_generation_prompt", "'add_generation_prompt' must be a boolean");
    }
    out->add_generation_prompt = body.at("add_generation_prompt").get<bool>();
  }
  return ParseTools(body, out);
}

std::optional<ApiError> ParsePrompt(const Json& body, OpenAiRequest* out) {
  if (IsNull(body, "prompt")) return Invalid("prompt", "'prompt' is required");
  Json prompt = body.at("prompt");
  // One prompt: a string, a list of token ids, or a list holding exactly one of those.
  if (prompt.is_array() && prompt.size() == 1 && (prompt[0].is_string() || prompt[0].is_array())) {
    prompt = Json(prompt[0]);
  }
  if (prompt.is_string()) {
    out->prompt = prompt.get<std::string>();
    if (out->prompt.empty()) return Invalid("prompt", "'prompt' must not be empty");
    return std::nullopt;
  }
  if (prompt.is_array() && !prompt.empty()) {
    for (const Json& id : prompt) {
      if (id.is_string() || id.is_array()) {
        return Unsupported("prompt", "several prompts in one request");
      }
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
        return Invalid("prompt", "a token-id prompt must hold non-negative integers");
      }
      out->prompt_ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    return std::nullopt;
  }
  return Invalid("prompt", "'prompt' must be a string or a list of token ids");
}

std::optional<ApiError> ParseStop(const Json& body, OpenAiRequest* out) {
  if (IsNull(body, "stop")) return std::nullopt;
  const Json& stop = body.at("stop");
  if (stop.is_string()) {
    if (!stop.get<std::string>().empty()) out->stop.push_back(stop.get<std::string>());
    return std::nullopt;
  }
  if (!stop.is_array() || stop.size() > kMaxStops) {
    return Invalid("stop",
                   absl::StrCat("'stop' must be a string or up to ", kMaxStops, " strings"));
  }
  for (const Json& s : stop) {
    if (!s.is_string() || s.get<std::string>().empty()) {
      return Invalid("stop", "each stop sequence must be a non-empty string");
    }
    out->stop.push_back(s.get<std::string>());
  }
  return std::nullopt;
}

}  // namespace

nlohmann::ordered_json ApiError::ToJson() const {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? Json() : Json(param)},
            {"code", code.empty() ? Json() : Json(code)}}}};
}

std::optional<ApiError> ParseRequest(Endpoint endpoint, const std::string& body_text,
                                     const std::string& served_model, OpenAiRequest* out) {
  // Bounded while it is parsed: a deeper body is refused at its first bracket past the limit,
  // never built (common/json_fields.h).
  absl::StatusOr<Json> parsed = ParseOrderedJson(body_text, "the request body", kMaxJsonDepth);
  if (!parsed.ok()) return Invalid("", std::string(parsed.status().message()));
  const Json& body = *parsed;
  if (!body.is_object()) return Invalid("", "the request body must be a JSON object");
  const bool chat = endpoint == Endpoint::kChatCompletions;
  static const std::set<std::string> kKnown = {"model",
                                               "prompt",
                                               "messages",
                                               "max_tokens",
                                               "max_completion_tokens",
                                               "temperature",
                                               "top_p",
                                               "top_k",
                                               "stop",
                                               "seed",
                                               "stream",
                                               "stream_options",
                                               "user",
                                               "n",
                                               "logprobs",
                                               "top_logprobs",
                                               "echo",
                                               "best_of",
                                               "suffix",
                                               "presence_penalty",
                                               "frequency_penalty",
                                               "logit_bias",
                                               "tools",
                                               "functions",
                                               "tool_choice",
                                               "parallel_tool_calls",
                                               "function_call",
                                               "response_format",
                                               "ignore_eos",
                                               "chat_template_kwargs",
                                               "add_generation_prompt"};
  for (const auto& [key, unused] : body.items()) {
    if (!kKnown.count(key)) {
      return Invalid(key, absl::StrCat("unrecognized request argument '", key, "'"));
    }
  }
  if ((chat && !IsNull(body, "prompt")) || (!chat && !IsNull(body, "messages"))) {
    return Invalid(chat ? "prompt" : "messages",
                   chat ? "chat completions take 'messages', not 'prompt'"
                        : "completions take 'prompt', not 'messages' (use /v1/chat/completions)");
  }
  if (std::optional<ApiError> e = CheckUnsupported(body, endpoint)) return e;

  out->endpoint = endpoint;
  if (!IsNull(body, "model")) {
    if (!body["model"].is_string()) return Invalid("model", "'model' must be a string");
    out->model = body["model"].get<std::string>();
    if (out->model != served_model) {
      return ApiError{
          .http_status = 404,
          .message = absl::StrCat("The model '", out->model,
                                  "' does not exist; this server serves '", served_model, "'"),
          .param = "model",
          .code = "model_not_found"};
    }
  }
  if (std::optional<ApiError> e = chat ? ParseMessages(body, out) : ParsePrompt(body, out))
    return e;
  int64_t max_tokens = -1;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (std::optional<ApiError> e = Int(body, key, 1, 1 << 20, &max_tokens)) return e;
  }
  if (max_tokens > 0) {
    out->max_tokens = static_cast<int>(max_tokens);
    out->max_tokens_set = true;
  }
  if (std::optional<ApiError> e = Number(body, "temperature", 0, 2, &out->temperature)) return e;
  if (std::optional<ApiError> e = Number(body, "top_p", 1e-9, 1, &out->top_p)) return e;
  int64_t top_k = 0;
  if (std::optional<ApiError> e = Int(body, "top_k", -1, 1 << 20, &top_k)) return e;
  out->top_k = top_k < 0 ? 0 : static_cast<int>(top_k);
  if (!IsNull(body, "seed")) {
    int64_t seed = 0;
    if (std::optional<ApiError> e = Int(body, "seed", INT64_MIN, INT64_MAX, &seed)) return e;
    out->seed = static_cast<uint64_t>(seed);
  }
  if (std::optional<ApiError> e = ParseStop(body, out)) return e;
  for (const char* key : {"stream", "ignore_eos"}) {
    if (!IsNull(body, key) && !body[key].is_boolean()) {
      return Invalid(key, absl::StrCat("'", key, "' must be a boolean"));
    }
  }
  out->stream = body.value("stream", Json(false)).is_boolean() && body.value("stream", false);
  out->ignore_eos = !IsNull(body, "ignore_eos") && body["ignore_eos"].get<bool>();
  if (!IsNull(body, "stream_options")) {
    const Json& so = body["stream_options"];
    if (!out->stream) return Invalid("stream_options", "'stream_options' needs 'stream': true");
    if (!so.is_object()) return Invalid("stream_options", "'stream_options' must be an object");
    for (const auto& [key, v] : so.items()) {
      if (key != "include_usage" || !v.is_boolean()) {
        return Invalid("stream_options", "'stream_options' takes only a boolean 'include_usage'");
      }
      out->include_usage = v.get<bool>();
    }
  }
  if (!IsNull(body, "user")) {
    if (!body["user"].is_string()) return Invalid("user", "'user' must be a string");
    out->user = body["user"].get<std::string>();
  }
  return std::nullopt;
}

}  // namespace semmoe::router::openai
