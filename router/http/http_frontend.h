// The router's OpenAI-compatible HTTP door, on the event-driven HttpServer (http_server.h):
//
//   POST /v1/completions        prompt (text or token ids) → text, streamed (SSE) or whole
//   POST /v1/chat/completions   messages, rendered with the model's chat template; tools, their
//                               calls parsed from the model's text (router/openai/tool_use.h)
//   GET  /v1/models             the one model served
//   GET  /health                200 when some engine rank can take requests, else 503
//   GET  /metrics               Prometheus text: the router's series and the door's own
//
// Completions are parsed, rendered (chat template) and submitted on a small pool of worker
// threads (`workers`), never on the I/O threads every connection shares: a long prompt's
// tokenising holds up no other client's stream, health check or metrics scrape. The door decodes
// nothing: streamed text is the engine's (CallSink::OnTokens).
//
// Each request goes straight to the router core (RouterApi::Submit; never through the router's
// gRPC service), so admission, rebatching, A/B arms and statistics are the same as for gRPC
// clients. The core's absl::Status becomes OpenAI's error JSON once (FromStatus): 400 for a bad
// request, 400 `context_length_exceeded` for a prompt the model cannot take, 404 unknown model,
// 413 a body past the limit, 429 the router is overloaded now (with Retry-After), 503 no rank,
// 504 deadline. A streamed answer's head goes out with its first token, so an error before it
// has its own status. A client that disconnects — queued, in prefill or mid-stream — has its
// call cancelled, which frees its engine slot.
//
// Thread-safe. Shutdown() (also the destructor) stops listening and abandons requests in flight.
#ifndef SEMMOE_ROUTER_HTTP_HTTP_FRONTEND_H_
#define SEMMOE_ROUTER_HTTP_HTTP_FRONTEND_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/work_queue.h"
#include "engine/text/chat_template.h"
#include "engine/text/special_text_mask.h"
#include "router/core/router_api.h"
#include "router/http/http_server.h"
#include "router/openai/openai_request.h"
#include "router/openai/tool_calls.h"

namespace semmoe::router::http {

struct HttpFrontendOptions {
  std::string listen = "127.0.0.1";
  int port = 0;              // 0: any free port (port()).
  std::string served_model;  // The name clients send as "model" and /v1/models lists.
  // Borrowed; null: the model has no chat template and chat completions get a 400 saying so.
  const engine::model::ChatTemplate* chat_template = nullptr;
  std::string chat_template_error;  // Why there is none (told to chat clients).
  // Borrowed: special-token text in the client's strings of a chat request (messages, tools,
  // chat_template_kwargs) is kept as text through the template (router
  // --message_special_tokens=text, the default); null: it is parsed as control tokens, as
  // Hugging Face's apply_chat_template does (=control).
  const engine::model::SpecialTextMask* message_special_text = nullptr;
  // The format the model writes tool calls in (router --tool_call_parser); none: requests with
  // tools are refused, saying so.
  std::optional<openai::ToolCallFormat> tool_call_format;
  RouterApi* router = nullptr;         // Borrowed; required.
  int default_chat_max_tokens = 1024;  // Chat requests without max_tokens.
  absl::Duration request_timeout = absl::Minutes(10);
  int threads = 2;  // The server's I/O threads.
  int workers = 2;  // Threads that parse, render and submit completions (≥ 1).
  HttpLimits limits;
  // HTTPS with these PEM files (clients are not asked for certificates: this is the door end
  // users come through, docs/SECURITY.md); empty: plain HTTP.
  std::string tls_cert_file, tls_key_file;
};

// The core's status as OpenAI's error (the one conversion).
openai::ApiError FromStatus(const absl::Status& status);

class HttpFrontend {
 public:
  // Binds and starts serving; InvalidArgument for bad options, Unavailable when the address
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpFrontend>> Start(HttpFrontendOptions options);
  ~HttpFrontend();

  int port() const { return server_->port(); }
  HttpCounters counters() const { return server_->counters(); }
  void Shutdown();

  // The handler the server runs (public for the fuzzer, which drives it through
  // ServeBytesForTesting without a socket). Completions run on `work`; null: on the calling
  // thread. REQUIRES: `work` outlives the handler's calls.
  static HttpHandler Handler(const HttpFrontendOptions& options,
                             std::function<HttpCounters()> counters, WorkQueue* work = nullptr);
  static HttpErrorBody ErrorBody();

 private:
  HttpFrontend(std::unique_ptr<WorkQueue> work, std::unique_ptr<HttpServer> server)
      : work_(std::move(work)), server_(std::move(server)) {}
  std::unique_ptr<WorkQueue> work_;  // Destroyed after the server: nothing posts then.
  std::unique_ptr<HttpServer> server_;
};

}  // namespace semmoe::router::http

#endif  // SEMMOE_ROUTER_HTTP_HTTP_FRONTEND_H_
