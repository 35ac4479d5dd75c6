// The router's HTTP door from raw bytes: the Beast parser, the connection's state machine
// (keep-alive, pipelining, chunked bodies, Expect: 100-continue, the size limits) and the OpenAI
// handlers, in-process over an in-memory stream (router/http/http_server.h ServeBytesForTesting).
// The router core behind it is a fake that answers at once — tokens then the end, a refusal, or a
// failure mid-stream, chosen by the request — so every answer path runs. Whatever the bytes, the
// door answers or closes: never a crash, a hang or a sanitizer report, and never a 500 (an
// exception that escaped the door's code and reached its safety net).
//
// Typed fields: an input whose body is a JSON object is also served with one of its fields (at
// any depth; which one, from a hash of the input) replaced by each JSON type in turn — the
// mutation that found `response_format.type: 3` ending the router. It runs under libFuzzer and in
// the replay test alike, since it is derived from the input.
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/json_fields.h"
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

using OrderedJson = nlohmann::ordered_json;

// The status codes of the HTTP/1.1 responses `out` holds, read as a client would (a status line,
// headers, then a Content-Length or chunked body): a body that quotes the request (error messages
// do) is never mistaken for a status line. False when `out` is not such responses (a response
// cut short at the end is allowed: the connection may close mid-stream).
bool Statuses(const std::string& out, std::vector<int>* statuses) {
  size_t at = 0;
  while (at < out.size()) {
    if (out.compare(at, 9, "HTTP/1.1 ") != 0 || at + 12 > out.size()) return false;
    statuses->push_back(std::atoi(out.substr(at + 9, 3).c_str()));
    const size_t head_end = out.find("\r\n\r\n", at);
    if (head_end == std::string::npos) return true;
    const std::string head = out.substr(at, head_end - at);
    at = head_end + 4;
    if (const size_t cl = head.find("Content-Length: "); cl != std::string::npos) {
      at += std::strtoull(head.c_str() + cl + 16, nullptr, 10);
    } else if (head.find("Transfer-Encoding: chunked") != std::string::npos) {
      while (true) {
        const size_t line_end = out.find("\r\n", at);
        if (line_end == std::string::npos) return true;  // Cut mid-stream.
        const size_t n = std::strtoull(out.c_str() + at, nullptr, 16);
        at = line_end + 2 + n + 2;
        if (n == 0 || at > out.size()) break;
      }
    }
  }
  return true;
}

void Serve(const Door& door, const std::string& bytes) {
  const std::string out =
      semmoe::router::http::ServeBytesForTesting(door.options, bytes, absl::Seconds(5));
  // Whatever was written is HTTP responses (or nothing), and none of them a 500.
  std::vector<int> statuses;
  if (!Statuses(out, &statuses)) std::abort();
  for (int status : statuses) {
    if (status == 500) std::abort();
  }
}

// Every node of `root` below it, as JSON pointers (at most `limit`).
void Nodes(const OrderedJson& node, const OrderedJson::json_pointer& at,
           std::vector<OrderedJson::json_pointer>* out, size_t limit) {
  if (out->size() >= limit) return;
  if (!at.empty()) out->push_back(at);
  if (node.is_object()) {
    for (const auto& [key, child] : node.items()) Nodes(child, at / key, out, limit);
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) Nodes(node[i], at / i, out, limit);
  }
}

// One request of `bytes` (head, then a JSON body) with one field replaced by each JSON type.
void ServeTypedMutants(const Door& door, const std::string& bytes) {
  const size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string::npos) return;
  const std::string head = bytes.substr(0, head_end);
  const size_t line_end = head.find("\r\n");
  const OrderedJson body = semmoe::ParseOrderedJsonOrDiscarded(bytes.substr(head_end + 4));
  if (!body.is_object()) return;
  std::vector<OrderedJson::json_pointer> nodes;
  Nodes(body, OrderedJson::json_pointer(), &nodes, 256);
  if (nodes.empty()) return;
  const OrderedJson::json_pointer& at = nodes[std::hash<std::string>()(bytes) % nodes.size()];
  static const OrderedJson kTypes[] = {nullptr, true, 0, -7, 18446744073709551615ull, 1.5,
                                       "", "text", OrderedJson::array(),
                                       OrderedJson::array({1}), OrderedJson::object(),
                                       OrderedJson::object({{"type", 3}})};
  for (const OrderedJson& by : kTypes) {
    OrderedJson mutant = body;
    mutant[at] = by;
    const std::string text = mutant.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
    // The request line and a fresh Content-Length (other headers dropped: the body is JSON).
    Serve(door, absl::StrCat(head.substr(0, line_end), "\r\nHost: x\r\nContent-Length: ",
                             text.size(), "\r\nConnection: close\r\n\r\n", text));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Door* door = new Door();
  const std::string bytes = semmoe::fuzz::Text(data, size);
  Serve(*door, bytes);
  ServeTypedMutants(*door, bytes);
  return 0;
}
