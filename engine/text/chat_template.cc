#include "engine/text/chat_template.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/json_fields.h"

namespace semmoe::engine::model {
namespace {

// bos_token / eos_token: a string, or an AddedToken object {"content": ...}; absent or null: "".
absl::StatusOr<std::string> TokenText(const nlohmann::ordered_json& config, const char* key,
                                      const std::string& source) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": ", key, ": expected a string or an object with \"content\""));
}

}  // namespace

absl::StatusOr<ChatTemplate> ChatTemplate::Load(const std::string& model_dir,
                                                const ChatTemplateOptions& options) {
  const std::string path = JoinPath(model_dir, "tokenizer_config.json");
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) {
      return absl::NotFoundError(absl::StrCat(path, " not found: the model has no chat template"));
    }
    return text.status();
  }
  nlohmann::ordered_json config = ParseOrderedJsonOrDiscarded(*text);
  if (config.is_discarded())
    return absl::InvalidArgumentError(absl::StrCat(path, ": invalid JSON"));
  return FromConfig(config, path, options);
}

absl::StatusOr<ChatTemplate> ChatTemplate::FromConfig(const nlohmann::ordered_json& config,
                                                      const std::string& source,
                                                      const ChatTemplateOptions& options) {
  if (!config.is_object()) return absl::InvalidArgumentError(source + ": expected an object");
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) {
    return absl::NotFoundError(absl::StrCat(source, " has no chat_template"));
  }
  std::string text;
  if (it->is_string()) {
    text = it->get<std::string>();
  } else if (it->is_array()) {  // [{"name": "default", "template": ...}, {"name": "tool_use", ...}]
    for (const auto& entry : *it) {
      if (entry.is_object() && entry.value("name", nlohmann::ordered_json()) == "default" &&
          entry.contains("template") && entry["template"].is_string()) {
        text = entry["template"].get<std::string>();
      }
    }
    if (text.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": chat_template is a list without a \"default\" template"));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": chat_template: expected a string or a list of named templates"));
  }
  absl::StatusOr<jinja::Template> parsed = jinja::Template::Parse(text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": chat_template: ", parsed.status().message()));
  }
  absl::StatusOr<std::string> bos = TokenText(config, "bos_token", source);
  if (!bos.ok()) return bos.status();
  absl::StatusOr<std::string> eos = TokenText(config, "eos_token", source);
  if (!eos.ok()) return eos.status();
  ChatTemplate t(*std::move(parsed), *std::move(bos), *std::move(eos), options);
  absl::StatusOr<ToolSupport> support = t.ProbeTools();
  if (!support.ok()) {
    return absl::Status(
        support.status().code(),
        absl::StrCat(source,
                     ": chat_template: the template could not render a probe conversation "
                     "(one user message, one tool, one call) within its bounds, so it would not "
                     "serve real ones: ",
                     support.status().message()));
  }
  t.tool_support_ = *support;
  return t;
}

absl::StatusOr<ToolSupport> ChatTemplate::ProbeTools() const {
  // Names no real conversation holds: found in the output only if the template put them there.
  constexpr char kFunction[] = "semmoe_probe_function_7c1d";
  constexpr char kResult[] = "semmoe_probe_result_52e9";
  using Json = nlohmann::ordered_json;
  // A probe the template refuses (raise_exception, a type error) says what it does not support;
  // one that runs out of work, time or steps says the template cannot serve at all.
  absl::Status unbounded;
  auto renders = [&](const Json& messages, const Json& extra, const char* needle) {
    absl::StatusOr<std::string> out = Apply(messages, /*add_generation_prompt=*/true, extra);
    if (!out.ok() && !absl::IsInvalidArgument(out.status()) && unbounded.ok()) {
      unbounded = out.status();
    }
    return out.ok() && out->find(needle) != std::string::npos;
  };
  const Json user = {{"role", "user"}, {"content", "What is the weather?"}};
  const Json tool = {{"type", "function"},
                     {"function",
                      {{"name", kFunction},
                       {"description", "d"},
                       {"parameters", {{"type", "object"}, {"properties", Json::object()}}}}}};
  const Json call = {{"id", "call_0"},
                     {"type", "function"},
                     {"function", {{"name", kFunction}, {"arguments", "{}"}}}};
  const Json result = {{"role", "tool"}, {"tool_call_id", "call_0"}, {"content", kResult}};
  auto conversation = [&](const Json& content) {
    return Json::array(
        {user,
         {{"role", "assistant"}, {"content", content}, {"tool_calls", Json::array({call})}},
         result});
  };
  ToolSupport s;
  s.tools_list = renders(Json::array({user}), {{"tools", Json::array({tool})}}, kFunction);
  const bool with_null = renders(conversation(nullptr), nullptr, kFunction);
  const bool with_empty = renders(conversation(""), nullptr, kFunction);
  s.calls = with_null || with_empty;
  s.calls_want_null_content = with_null && !with_empty;
  s.results = renders(conversation(with_null && !with_empty ? Json() : Json("")), nullptr, kResult);
  if (!unbounded.ok()) return unbounded;
  return s;
}

absl::StatusOr<std::string> ChatTemplate::Apply(const nlohmann::ordered_json& messages,
                                                bool add_generation_prompt,
                                                const nlohmann::ordered_json& extra) const {
  if (!messages.is_array()) return absl::InvalidArgumentError("messages must be an array");
  absl::StatusOr<jinja::Value> msgs = jinja::Value::FromJson(messages);
  if (!msgs.ok())
    return absl::InvalidArgumentError(absl::StrCat("messages: ", msgs.status().message()));
  jinja::Value vars = jinja::Value::NewDict();
  if (extra.is_object()) {
    for (const auto& [key, value] : extra.items()) {
      absl::StatusOr<jinja::Value> v = jinja::Value::FromJson(value);
      if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat(key, ": ", v.status().message()));
      vars.Set(key, *std::move(v));
    }
  } else if (!extra.is_null()) {
    return absl::InvalidArgumentError("the template's extra variables must be an object");
  }
  vars.Set("messages", *std::move(msgs));
  vars.Set("add_generation_prompt", jinja::Value::Bool(add_generation_prompt));
  vars.Set("bos_token", jinja::Value::String(bos_token_));
  vars.Set("eos_token", jinja::Value::String(eos_token_));
  absl::StatusOr<std::string> out = template_.Render(
      vars, {.deadline = absl::Now() + options_.render_timeout, .cancel = options_.cancel});
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat("chat template: ", out.status().message()));
  }
  return out;
}

}  // namespace semmoe::engine::model
