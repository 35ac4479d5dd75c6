// The router's HTTP door from raw bytes: the Beast parser, the connection's state machine
// (keep-alive, pipelining, chunked bodies, Expect: 100-continue, the size limits) and the OpenAI
// handlers, in-process over an in-memory stream (router/http/http_server.h ServeBytesForTesting).
// The router core behind it is a fake that answers at once — tokens then the end, a refusal, or a
// failure mid-stream, chosen by the request — so every answer path runs. Whatever the bytes, the
// door answers or closes: never a crash, a hang or a sanitizer report.
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/text/chat_template.h"
#include "router/core/router_api.h"
#include "router/http/http_frontend.h"
#include "router/http/http_server.h"
#include "router/openai/tool_calls.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using semmoe::router::CallHandle;
using semmoe::router::CallSink;
namespace rpc = semmoe::router::rpc;

class NoHandle : public CallHandle {
 public:
  void Cancel() override {}
};

// Answers every request at once, on the caller's thread; how depends on the prompt's length.
class FakeRouter : public semmoe::router::RouterApi {
 public:
  absl::StatusOr<std::shared_ptr<CallHandle>> Submit(const rpc::GenerateRequest& request,
                                                     std::optional<absl::Time>,
                                                     std::shared_ptr<CallSink> sink) override {
    const size_t n = request.text().size() + request.token_ids_size();
    if (n == 0) return absl::InvalidArgumentError("the prompt is empty");
    switch (n % 5) {
      case 0:
        return absl::ResourceExhaustedError("overloaded");
      case 1:
        return absl::OutOfRangeError("the prompt has too many tokens");
      default:
        break;
    }
    const int32_t ids[] = {3, 70, 71, 72};
    // Some answers hold a tool call, cut anywhere across the two pieces.
    const std::string text = n % 3 == 0 ? "some text"
                                        : "so <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n"
                                          "</tool_call>";
    const size_t cut = n % text.size();
    sink->OnTokens(ids, text.substr(0, cut));
    sink->OnTokens({}, text.substr(cut));
    if (n % 5 == 2) {
      sink->OnEnd(absl::UnavailableError("the rank failed"), nullptr);
    } else {
      rpc::FinalRecord final;
      final.set_prompt_tokens(static_cast<int>(n));
      final.set_completion_tokens(4);
      final.set_finish_reason(n % 2 ? "length" : "stop");
      final.set_text(text);
      sink->OnEnd(absl::OkStatus(), &final);
    }
    return std::make_shared<NoHandle>();
  }
  rpc::RouterStats Stats() const override {
    rpc::RouterStats s;
    s.add_ranks()->set_usable(true);
    return s;
  }
  std::string MetricsText() const override { return ""; }
};

struct Door {
  Door() {
    // ChatML that lists tools and renders calls: requests with tools reach the parser.
    auto chat = semmoe::engine::model::ChatTemplate::FromConfig(
        {{"chat_template",
          "{% for t in tools or [] %}{{ t | tojson }}{% endfor %}{% for m in messages %}"
          "<|im_start|>{{ m.role }}\n{{ m.content or '' }}{% for c in m.tool_calls or [] %}"
          "<tool_call>{{ c.function.name }}</tool_call>{% endfor %}<|im_end|>\n{% endfor %}"
          "<|im_start|>assistant\n"}},
        "fuzz");
    if (!chat.ok()) std::abort();
    chat_template = std::make_unique<semmoe::engine::model::ChatTemplate>(*std::move(chat));
    using semmoe::router::http::HttpFrontend;
    options.limits = {.max_header_bytes = 8 << 10, .max_body_bytes = 64 << 10};
    options.handler = HttpFrontend::Handler(
        {.served_model = "m",
         .chat_template = chat_template.get(),
         .tool_call_format = semmoe::router::openai::ToolCallFormat::kHermes,
         .router = &router},
        [] { return semmoe::router::http::HttpCounters{}; });
    options.error_body = HttpFrontend::ErrorBody();
  }
  std::unique_ptr<semmoe::engine::model::ChatTemplate> chat_template;
  FakeRouter router;
  semmoe::router::http::HttpServerOptions options;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Door* door = new Door();
  const std::string out = semmoe::router::http::ServeBytesForTesting(
      door->options, semmoe::fuzz::Text(data, size), absl::Seconds(5));
  // Whatever was written is HTTP responses (or nothing).
  if (!out.empty() && out.rfind("HTTP/1.1 ", 0) != 0) std::abort();
  return 0;
}
