// Chat templates (tokenizer_config.json's chat_template): parse, then render a conversation.
#include "engine/text/jinja/template.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using semmoe::engine::jinja::Template;
  using semmoe::engine::jinja::Value;
  absl::StatusOr<Template> t = Template::Parse(semmoe::fuzz::Text(data, size));
  if (!t.ok()) return 0;
  static const Value* vars = [] {
    auto v = Value::FromJson(nlohmann::ordered_json::parse(
        R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"},
                         {"role": "assistant", "content": "<think>x</think>y",
                          "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}],
            "add_generation_prompt": true, "bos_token": "<s>", "tools": [{"name": "f"}]})"));
    return new Value(*v);
  }();
  (void)t->Render(*vars, {.max_output_bytes = 1 << 16, .max_steps = 200'000});
  return 0;
}
