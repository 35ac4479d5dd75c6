// A checkpoint's chat template: `chat_template` from tokenizer_config.json (a string, or a list
// of {"name", "template"} whose "default" entry is used), rendered with the Jinja subset of
// engine/text/jinja/ the way transformers' apply_chat_template does: variables `messages`,
// `add_generation_prompt`, `bos_token`, `eos_token`, plus any extra keyword (`tools`,
// `enable_thinking`, ...).
//
// Thread-safe: immutable after Load/FromConfig.
#ifndef SEMMOE_ENGINE_TEXT_CHAT_TEMPLATE_H_
#define SEMMOE_ENGINE_TEXT_CHAT_TEMPLATE_H_

#include <atomic>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/text/jinja/template.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::model {

// What a template does with OpenAI-style tool use, found at load by rendering probe
// conversations (a template is code: what it shows the model is what it renders).
struct ToolSupport {
  bool tools_list = false;  // Renders the `tools` variable (the functions the model may call).
  bool calls = false;       // Renders an assistant turn's `tool_calls`.
  // The calls render only with the turn's content null (DeepSeek-V3), not "" — or the reverse
  // (Qwen3 fails on null); meaningful when `calls`.
  bool calls_want_null_content = false;
  bool results = false;  // Renders role "tool" messages (the calls' results).
};

// How long one render may take (router --chat_template_render_ms), and a flag that stops renders
// in flight (the server shutting down). Renders are also bounded by work, steps and output
// (jinja::RenderLimits), whatever the time.
struct ChatTemplateOptions {
  absl::Duration render_timeout = absl::Milliseconds(1000);
  const std::atomic<bool>* cancel = nullptr;  // Borrowed; must outlive the template.
};

class ChatTemplate {
 public:
  // From `model_dir`/tokenizer_config.json. NotFound when the file or its chat_template is
  // missing (the model then serves completions only); InvalidArgument naming the file for bad
  // JSON, a bad template or wrong types; ResourceExhausted, DeadlineExceeded or Cancelled when
  // the template cannot render the load-time probe conversations within the bounds (a template
  // that loops or grows without end: the start stops, saying so).
  static absl::StatusOr<ChatTemplate> Load(const std::string& model_dir,
                                           const ChatTemplateOptions& options = {});
  // From the parsed tokenizer_config.json (`source` names it in errors).
  static absl::StatusOr<ChatTemplate> FromConfig(const nlohmann::ordered_json& config,
                                                 const std::string& source,
                                                 const ChatTemplateOptions& options = {});

  // The prompt for `messages` (an array of {"role", "content", ...} objects, passed to the
  // template as they are). `extra` (an object; may be null) adds variables: tools,
  // enable_thinking, .... InvalidArgument when the template refuses the conversation
  // (raise_exception) or fails on it, with the template's line; ResourceExhausted past the work,
  // step or output bounds, DeadlineExceeded past options.render_timeout, Cancelled.
  absl::StatusOr<std::string> Apply(const nlohmann::ordered_json& messages,
                                    bool add_generation_prompt,
                                    const nlohmann::ordered_json& extra = nullptr) const;

  const ToolSupport& tool_support() const { return tool_support_; }
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }

 private:
  ChatTemplate(jinja::Template t, std::string bos, std::string eos, ChatTemplateOptions options)
      : template_(std::move(t)),
        bos_token_(std::move(bos)),
        eos_token_(std::move(eos)),
        options_(options) {}
  absl::StatusOr<ToolSupport> ProbeTools() const;

  jinja::Template template_;
  ToolSupport tool_support_;
  std::string bos_token_;  // "" when the config names none.
  std::string eos_token_;
  ChatTemplateOptions options_;
};

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_CHAT_TEMPLATE_H_
