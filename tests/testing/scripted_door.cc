// The router's HTTP door over a scripted model (router/http/testing/scripted_router.h): the
// official openai client's tool conversation in //tests:openai_test runs against it, since no
// test model here can be trusted to write a tool call. The door, the chat template and the
// tool-call parsing are the product's; only the model's text is fixed (WeatherAgent).
//
//   scripted_door --tokenizer_config=FILE --tool_call_parser=hermes --port_file=F
// serves on 127.0.0.1 until SIGINT/SIGTERM.
#include <pthread.h>

#include <csignal>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "engine/text/chat_template.h"
#include "router/http/http_frontend.h"
#include "router/http/testing/scripted_router.h"
#include "router/openai/tool_use.h"

ABSL_FLAG(std::string, tokenizer_config, "", "the chat template's tokenizer_config.json");
ABSL_FLAG(std::string, tool_call_parser, "hermes", "the format the scripted model writes");
ABSL_FLAG(std::string, served_model, "agent", "the model's name for clients");
ABSL_FLAG(std::string, port_file, "", "write the HTTP port here once serving");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // SIGINT/SIGTERM blocked in every thread, waited for by main.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  using namespace semmoe;  // NOLINT(build/namespaces)
  auto fail = [](const absl::Status& s) {
    std::cerr << "scripted_door: " << s << "\n";
    return 1;
  };
  absl::StatusOr<std::string> text = ReadFile(absl::GetFlag(FLAGS_tokenizer_config));
  if (!text.ok()) return fail(text.status());
  absl::StatusOr<nlohmann::ordered_json> config =
      ParseOrderedJson(*text, absl::GetFlag(FLAGS_tokenizer_config), 64);
  if (!config.ok()) return fail(config.status());
  absl::StatusOr<engine::model::ChatTemplate> chat =
      engine::model::ChatTemplate::FromConfig(*config, absl::GetFlag(FLAGS_tokenizer_config));
  if (!chat.ok()) return fail(chat.status());
  absl::StatusOr<router::openai::ToolCallFormat> format =
      router::openai::ToolCallFormatFromName(absl::GetFlag(FLAGS_tool_call_parser));
  if (!format.ok()) return fail(format.status());
  router::testing::ScriptedRouter scripted(
      [f = *format](const std::string& prompt) { return router::testing::WeatherAgent(f, prompt); });
  absl::StatusOr<std::unique_ptr<router::http::HttpFrontend>> door =
      router::http::HttpFrontend::Start({.served_model = absl::GetFlag(FLAGS_served_model),
                                         .chat_template = &*chat,
                                         .tool_call_format = *format,
                                         .router = &scripted});
  if (!door.ok()) return fail(door.status());
  if (!absl::GetFlag(FLAGS_port_file).empty()) {
    absl::Status s = WriteFileAtomically(absl::GetFlag(FLAGS_port_file),
                                         std::to_string((*door)->port()) + "\n");
    if (!s.ok()) return fail(s);
  }
  std::cout << "scripted_door: serving on http://127.0.0.1:" << (*door)->port() << "/v1"
            << std::endl;
  int signal = 0;
  sigwait(&signals, &signal);
  return 0;
}
