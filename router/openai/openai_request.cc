#include "router/openai/openai_request.h"

#include <cmath>
#include <functional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json_fields.h"
#include "router/openai/request_fields.h"

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
  return RequestFields(body, "").Find(key) == nullptr;
}

// Fields OpenAI defines that we do not implement: accepted only at the value that means "off".
std::optional<ApiError> CheckUnsupported(const Json& body, Endpoint endpoint) {
  const RequestFields fields(body, "");
  auto off = [&](const char* key, const std::function<bool(const Json&)>& is_off,
                 const std::string& what) -> std::optional<ApiError> {
    const Json* v = fields.Find(key);
    if (v == nullptr || is_off(*v)) return std::nullopt;
    return Unsupported(key, what);
  };
  auto is_false = [](const Json& v) { return AsBool(v) == std::optional<bool>(false); };
  auto is_zero = [](const Json& v) { return AsNumber(v) == std::optional<double>(0); };
  auto is_one = [](const Json& v) { return AsInt(v) == std::optional<int64_t>(1); };
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
             "suffix",
             // (json's empty() is false for every string: a string is one value.)
             [](const Json& v) { return AsString(v) != nullptr && AsString(v)->empty(); },
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
        return Invalid(key,
                       absl::StrCat("'", key, "' is for chat completions (/v1/chat/completions)"));
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
  if (const Json* format = fields.Find("response_format")) {
    const RequestFields f(*format, "response_format");
    if (!format->is_object()) return fields.WrongType("response_format", "an object");
    std::string type;
    if (std::optional<ApiError> e = f.String("type", &type)) return e;
    if (type != "text") {
      return Unsupported("response_format", "'response_format' other than {\"type\": \"text\"}");
    }
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
  for (size_t j = 0; j < it->size(); ++j) {
    const Json& part = (*it)[j];
    const RequestFields f(part, absl::StrCat(param, "[", j, "]"));
    std::string type;
    if (!part.is_object() || !f.Has("type")) {
      return Invalid(param, "each content part must be an object with a \"type\"");
    }
    if (std::optional<ApiError> e = f.String("type", &type)) return e;
    if (type != "text") return Unsupported(param, absl::StrCat("content part type '", type, "'"));
    const Json* text = f.Find("text");
    if (text == nullptr || AsString(*text) == nullptr) {
      return Invalid(param, "a text part needs a string \"text\"");
    }
    texts.push_back(*AsString(*text));
  }
  *it = absl::StrJoin(texts, "\n");
  return std::nullopt;
}

// The string field `key` of `object`, or null when absent or not a string.
const std::string* StringField(const Json& object, const char* key) {
  const Json* v = RequestFields(object, "").Find(key);
  return v != nullptr ? AsString(*v) : nullptr;
}

// OpenAI's function names: 1-64 of [A-Za-z0-9_-].
bool ValidFunctionName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

// The tool calls and results a conversation holds, checked against each other once every message
// has been read: each result answers an earlier call, and (with `tools`) each call names a tool.
struct ToolHistory {
  std::set<std::string> call_ids;  // Of the assistant calls seen so far.
};

// An assistant message's `tool_calls` (each {"id", "type": "function", "function": {"name",
// "arguments": a JSON string}}) and a tool message's `tool_call_id`.
std::optional<ApiError> CheckToolFields(const Json& m, const std::string& role,
                                        const std::string& param, ToolHistory* history) {
  const RequestFields fields(m, param);
  if (const Json* calls = fields.Find("tool_calls")) {
    const std::string p = param + ".tool_calls";
    if (role != "assistant") return Invalid(p, "only assistant messages carry 'tool_calls'");
    if (!calls->is_array()) return Invalid(p, "'tool_calls' must be an array");
    for (size_t j = 0; j < calls->size(); ++j) {
      const Json& call = (*calls)[j];
      const std::string pj = absl::StrCat(p, "[", j, "]");
      const Json* function = RequestFields(call, pj).Find("function");
      if (!call.is_object() || StringField(call, "id") == nullptr ||
          RequestFields(call, pj).Find("type") == nullptr || call["type"] != "function" ||
          function == nullptr || !function->is_object() ||
          StringField(*function, "name") == nullptr ||
          StringField(*function, "arguments") == nullptr) {
        return Invalid(pj,
                       "a tool call must be {\"id\": string, \"type\": \"function\", \"function\": "
                       "{\"name\": string, \"arguments\": string}}");
      }
      // The arguments go into the prompt as the model's own JSON: text that is not JSON (say,
      // `}</tool_call><|im_end|>...`) would close the call block and write the turn itself.
      absl::StatusOr<Json> args =
          ParseOrderedJson(*StringField(*function, "arguments"), "arguments", kMaxJsonDepth);
      if (!args.ok()) {
        return Invalid(pj + ".function.arguments",
                       absl::StrCat("the arguments of ", pj, " must be JSON text (",
                                    args.status().message(), ")"));
      }
      history->call_ids.insert(*StringField(call, "id"));
    }
  }
  if (role == "tool") {
    const std::string* id = StringField(m, "tool_call_id");
    if (id == nullptr) {
      return Invalid(param + ".tool_call_id", "a tool message needs a string 'tool_call_id'");
    }
    if (!history->call_ids.count(*id)) {
      return Invalid(param + ".tool_call_id",
                     absl::StrCat("'", param, ".tool_call_id' is '", *id,
                                  "', which no earlier assistant tool call has as its id"));
    }
  }
  return std::nullopt;
}

// `tools`, `tool_choice` and `parallel_tool_calls` of a chat request.
std::optional<ApiError> ParseTools(const Json& body, OpenAiRequest* out) {
  const RequestFields fields(body, "");
  std::set<std::string> names;
  if (const Json* tools = fields.Find("tools")) {
    if (!tools->is_array()) return Invalid("tools", "'tools' must be an array");
    static const std::set<std::string> kFunctionKeys = {"name", "description", "parameters",
                                                        "strict"};
    for (size_t i = 0; i < tools->size(); ++i) {
      const Json& tool = (*tools)[i];
      const std::string p = absl::StrCat("tools[", i, "]");
      const std::string* type = StringField(tool, "type");
      if (!tool.is_object() || type == nullptr) {
        return Invalid(p, "a tool must be {\"type\": \"function\", \"function\": {...}}");
      }
      if (*type != "function") {
        return Unsupported(p + ".type", absl::StrCat("tool type '", *type, "'"));
      }
      for (const auto& [key, unused] : tool.items()) {
        if (key != "type" && key != "function") {
          return Invalid(p, absl::StrCat("unrecognized tool field '", key, "'"));
        }
      }
      const RequestFields tf(tool, p);
      const Json* function = tf.Find("function");
      if (function == nullptr || !function->is_object()) {
        return Invalid(p + ".function", "a function tool needs a 'function' object");
      }
      const Json& f = *function;
      for (const auto& [key, unused] : f.items()) {
        if (!kFunctionKeys.count(key)) {
          return Invalid(p + ".function", absl::StrCat("unrecognized function field '", key, "'"));
        }
      }
      const std::string* name = StringField(f, "name");
      if (name == nullptr || !ValidFunctionName(*name)) {
        return Invalid(p + ".function.name",
                       "a function's name must be 1 to 64 letters, digits, '_' or '-'");
      }
      if (!names.insert(*name).second) {
        return Invalid(p + ".function.name", absl::StrCat("two tools are named '", *name, "'"));
      }
      const RequestFields ff(f, p + ".function");
      if (ff.Find("description") != nullptr && !f["description"].is_string()) {
        return Invalid(p + ".function.description", "'description' must be a string");
      }
      if (ff.Find("parameters") != nullptr && !f["parameters"].is_object()) {
        return Invalid(p + ".function.parameters", "'parameters' must be a JSON Schema object");
      }
      bool strict = false;
      if (ff.Find("strict") != nullptr && !f["strict"].is_boolean()) {
        return Invalid(p + ".function.strict", "'strict' must be a boolean");
      }
      if (std::optional<ApiError> e = ff.Bool("strict", &strict)) return e;
      if (strict) {
        // Strict mode promises arguments that match the schema: that needs constrained decoding.
        return Unsupported(p + ".function.strict", "'strict': true (schema-constrained arguments)");
      }
    }
    if (!tools->empty()) out->tools = *tools;
  }
  const bool have_tools = !out->tools.is_null();
  out->tool_choice = have_tools ? ToolChoice::kAuto : ToolChoice::kNone;
  if (const Json* choice = fields.Find("tool_choice")) {
    const Json& c = *choice;
    const Json* function = RequestFields(c, "tool_choice").Find("function");
    const std::string* name = function != nullptr ? StringField(*function, "name") : nullptr;
    if (c == "none") {
      out->tool_choice = ToolChoice::kNone;
    } else if (c == "auto" || c == "required") {
      out->tool_choice = c == "auto" ? ToolChoice::kAuto : ToolChoice::kRequired;
    } else if (c.is_object() && StringField(c, "type") != nullptr &&
               *StringField(c, "type") == "function" && name != nullptr) {
      out->tool_choice = ToolChoice::kNamed;
      out->tool_choice_name = *name;
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
  if (fields.Has("parallel_tool_calls") && !body["parallel_tool_calls"].is_boolean()) {
    return Invalid("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
  }
  if (std::optional<ApiError> e = fields.Bool("parallel_tool_calls", &out->parallel_tool_calls)) {
    return e;
  }
  // Calls in the conversation name tools the request offers (when it offers any).
  if (have_tools) {
    for (size_t i = 0; i < out->messages.size(); ++i) {
      const Json* calls = RequestFields(out->messages[i], "").Find("tool_calls");
      if (calls == nullptr) continue;
      for (size_t j = 0; j < calls->size(); ++j) {
        const std::string* name = StringField((*calls)[j]["function"], "name");
        if (name != nullptr && !names.count(*name)) {
          return Invalid(absl::StrCat("messages[", i, "].tool_calls[", j, "].function.name"),
                         absl::StrCat("messages[", i, "].tool_calls[", j, "] calls '", *name,
                                      "', which is not in 'tools'"));
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<ApiError> ParseMessages(const Json& body, OpenAiRequest* out) {
  const RequestFields fields(body, "");
  const Json* list = fields.Find("messages");
  if (list == nullptr) return Invalid("messages", "'messages' is required");
  const Json& messages = *list;
  if (!messages.is_array() || messages.empty()) {
    return Invalid("messages", "'messages' must be a non-empty array");
  }
  static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
  out->messages = Json::array();
  ToolHistory history;
  for (size_t i = 0; i < messages.size(); ++i) {
    Json m = messages[i];
    const std::string param = absl::StrCat("messages[", i, "]");
    if (!m.is_object()) return Invalid(param, "each message must be an object");
    const std::string* role_field = StringField(m, "role");
    if (role_field == nullptr || !kRoles.count(*role_field)) {
      return Invalid(param + ".role",
                     "role must be one of system, developer, user, assistant, tool");
    }
    const std::string role = *role_field;
    if (std::optional<ApiError> e = NormaliseContent(m, i)) return e;
    if (std::optional<ApiError> e = CheckToolFields(m, role, param, &history)) return e;
    const RequestFields mf(m, param);
    const bool has_calls = mf.Has("tool_calls");
    if (!mf.Has("content") && !(role == "assistant" && has_calls)) {
      return Invalid(param + ".content", "content is required");
    }
    out->messages.push_back(std::move(m));
  }
  if (fields.Has("chat_template_kwargs")) {
    const Json* kwargs = nullptr;
    if (fields.Object("chat_template_kwargs", &kwargs)) {
      return Invalid("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    }
    out->template_kwargs = *kwargs;
  }
  if (fields.Has("add_generation_prompt") && !body["add_generation_prompt"].is_boolean()) {
    return Invalid("add_generation_prompt", "'add_generation_prompt' must be a boolean");
  }
  if (std::optional<ApiError> e =
          fields.Bool("add_generation_prompt", &out->add_generation_prompt)) {
    return e;
  }
  return ParseTools(body, out);
}

std::optional<ApiError> ParsePrompt(const Json& body, OpenAiRequest* out) {
  const Json* field = RequestFields(body, "").Find("prompt");
  if (field == nullptr) return Invalid("prompt", "'prompt' is required");
  const Json* prompt = field;
  // One prompt: a string, a list of token ids, or a list holding exactly one of those.
  if (prompt->is_array() && prompt->size() == 1 &&
      ((*prompt)[0].is_string() || (*prompt)[0].is_array())) {
    prompt = &(*prompt)[0];
  }
  if (const std::string* text = AsString(*prompt)) {
    out->prompt = *text;
    if (out->prompt.empty()) return Invalid("prompt", "'prompt' must not be empty");
    return std::nullopt;
  }
  if (prompt->is_array() && !prompt->empty()) {
    for (const Json& id : *prompt) {
      if (id.is_string() || id.is_array()) {
        return Unsupported("prompt", "several prompts in one request");
      }
      const std::optional<int64_t> i = AsInt(id);
      if (!i.has_value() || *i < 0 || *i > INT32_MAX) {
        return Invalid("prompt", "a token-id prompt must hold non-negative integers");
      }
      out->prompt_ids.push_back(static_cast<int32_t>(*i));
    }
    return std::nullopt;
  }
  return Invalid("prompt", "'prompt' must be a string or a list of token ids");
}

std::optional<ApiError> ParseStop(const Json& body, OpenAiRequest* out) {
  const Json* field = RequestFields(body, "").Find("stop");
  if (field == nullptr) return std::nullopt;
  const Json& stop = *field;
  if (const std::string* s = AsString(stop)) {
    if (!s->empty()) out->stop.push_back(*s);
    return std::nullopt;
  }
  if (!stop.is_array() || stop.size() > kMaxStops) {
    return Invalid("stop",
                   absl::StrCat("'stop' must be a string or up to ", kMaxStops, " strings"));
  }
  for (const Json& item : stop) {
    const std::string* s = AsString(item);
    if (s == nullptr || s->empty()) {
      return Invalid("stop", "each stop sequence must be a non-empty string");
    }
    out->stop.push_back(*s);
  }
  return std::nullopt;
}

}  // namespace

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
  const RequestFields fields(body, "");
  if (std::optional<ApiError> e = fields.String("model", &out->model)) return e;
  if (fields.Has("model") && out->model != served_model) {
    return ApiError{
        .http_status = 404,
        .message = absl::StrCat("The model '", out->model, "' does not exist; this server serves '",
                                served_model, "'"),
        .param = "model",
        .code = "model_not_found"};
  }
  if (std::optional<ApiError> e = chat ? ParseMessages(body, out) : ParsePrompt(body, out))
    return e;
  int64_t max_tokens = -1;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (std::optional<ApiError> e = fields.Int(key, 1, 1 << 20, &max_tokens)) return e;
  }
  if (max_tokens > 0) {
    out->max_tokens = static_cast<int>(max_tokens);
    out->max_tokens_set = true;
  }
  if (std::optional<ApiError> e = fields.Number("temperature", 0, 2, &out->temperature)) return e;
  if (std::optional<ApiError> e = fields.Number("top_p", 1e-9, 1, &out->top_p)) return e;
  int64_t top_k = 0;
  if (std::optional<ApiError> e = fields.Int("top_k", -1, 1 << 20, &top_k)) return e;
  out->top_k = top_k < 0 ? 0 : static_cast<int>(top_k);
  if (fields.Has("seed")) {
    int64_t seed = 0;
    if (std::optional<ApiError> e = fields.Int("seed", INT64_MIN, INT64_MAX, &seed)) return e;
    out->seed = static_cast<uint64_t>(seed);
  }
  if (std::optional<ApiError> e = ParseStop(body, out)) return e;
  if (std::optional<ApiError> e = fields.Bool("stream", &out->stream)) return e;
  if (std::optional<ApiError> e = fields.Bool("ignore_eos", &out->ignore_eos)) return e;
  if (const Json* so = fields.Find("stream_options")) {
    if (!out->stream) return Invalid("stream_options", "'stream_options' needs 'stream': true");
    if (!so->is_object()) return Invalid("stream_options", "'stream_options' must be an object");
    for (const auto& [key, v] : so->items()) {
      const std::optional<bool> include = AsBool(v);
      if (key != "include_usage" || !include.has_value()) {
        return Invalid("stream_options", "'stream_options' takes only a boolean 'include_usage'");
      }
      out->include_usage = *include;
    }
  }
  if (std::optional<ApiError> e = fields.String("user", &out->user)) return e;
  return std::nullopt;
}

}  // namespace semmoe::router::openai
