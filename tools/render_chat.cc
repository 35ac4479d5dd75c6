// render_chat: renders conversations with a checkpoint's chat template, one JSON line out per
// line in — what the router's /v1/chat/completions would build as the prompt. For checking a
// model's template and for the differential test against @huggingface/jinja
// (//tests:chat_template_test).
//
//   render_chat --config DIR/tokenizer_config.json < cases.jsonl > out.jsonl
//
// Each input line: {"messages": [...], "add_generation_prompt": true, "extra": {...}}; each
// output line: {"text": "..."} or {"error": "..."}. Exit 1 if the template does not load.
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "engine/text/chat_template.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, config, "", "tokenizer_config.json holding chat_template");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("render_chat --config tokenizer_config.json < cases.jsonl");
  absl::ParseCommandLine(argc, argv);
  const std::string path = absl::GetFlag(FLAGS_config);
  if (path.empty()) {
    std::cerr << "render_chat: --config is required\n";
    return 2;
  }
  absl::StatusOr<std::string> text = semmoe::ReadFile(path);
  if (!text.ok()) {
    std::cerr << "render_chat: " << text.status().message() << "\n";
    return 1;
  }
  const auto config = semmoe::ParseOrderedJsonOrDiscarded(*text);
  absl::StatusOr<semmoe::engine::model::ChatTemplate> chat =
      semmoe::engine::model::ChatTemplate::FromConfig(config, path);
  if (config.is_discarded() || !chat.ok()) {
    std::cerr << "render_chat: "
              << (config.is_discarded() ? path + ": invalid JSON"
                                        : std::string(chat.status().message()))
              << "\n";
    return 1;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    nlohmann::ordered_json out;
    const auto c = semmoe::ParseOrderedJsonOrDiscarded(line);
    if (c.is_discarded() || !c.is_object() || !c.contains("messages")) {
      out["error"] = "each line must be an object with \"messages\"";
    } else {
      const auto extra = c.value("extra", nlohmann::ordered_json());
      const auto gen = c.value("add_generation_prompt", nlohmann::ordered_json(false));
      absl::StatusOr<std::string> r =
          chat->Apply(c["messages"], gen.is_boolean() && gen.get<bool>(), extra);
      if (r.ok()) {
        out["text"] = *r;
      } else {
        out["error"] = std::string(r.status().message());
      }
    }
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}
