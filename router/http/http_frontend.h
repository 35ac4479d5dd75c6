// The router's OpenAI-compatible HTTP frontend (cpp-httplib), beside its gRPC service:
//
//   POST /v1/completions        prompt (text or token ids) → text, streamed (SSE) or whole
//   POST /v1/chat/completions   messages, rendered with the model's chat template
//   GET  /v1/models             the one model served
//   GET  /health                200 when some engine rank can take requests, else 503
//   GET  /metrics               Prometheus text (`metrics`), when set
//
// Each request becomes one RouterService.Generate call on `router` (the router's own service,
// over an in-process channel), so admission, rebatching, A/B arms and statistics are the same
// as for gRPC clients. Errors before the first token get OpenAI's error JSON with a matching
// status (400 bad request, 404 unknown model, 429 the router's queue is full, 503 no rank, 504
// deadline). A client that disconnects has its call cancelled, which frees its engine slot:
// checked every `poll_interval` while the call runs.
//
// Thread-safe. Shutdown() (also the destructor) stops listening and ends requests in flight.
#ifndef SEMMOE_ROUTER_HTTP_HTTP_FRONTEND_H_
#define SEMMOE_ROUTER_HTTP_HTTP_FRONTEND_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/model/chat_template.h"
#include "engine/model/tokenizer.h"
#include "grpcpp/grpcpp.h"
#include "router/proto/router.grpc.pb.h"

namespace httplib {
class Server;
}

namespace semmoe::router::http {

struct HttpFrontendOptions {
  std::string listen = "127.0.0.1";
  int port = 0;              // 0: any free port (port()).
  std::string served_model;  // The name clients send as "model" and /v1/models lists.
  const engine::model::Tokenizer* tokenizer = nullptr;  // Borrowed; required (streamed text).
  // Borrowed; null: the model has no chat template and chat completions get a 400 saying so.
  const engine::model::ChatTemplate* chat_template = nullptr;
  std::string chat_template_error;                 // Why there is none (told to chat clients).
  std::shared_ptr<grpc::ChannelInterface> router;  // RouterService.
  std::function<std::string()> metrics;            // GET /metrics (null: 404).
  int default_chat_max_tokens = 1024;              // Chat requests without max_tokens.
  absl::Duration request_timeout = absl::Minutes(10);
  absl::Duration poll_interval = absl::Milliseconds(100);
  int threads = 128;  // Connections served at once.
  size_t max_body_bytes = 32 << 20;
};

class HttpFrontend {
 public:
  // Binds and starts serving; InvalidArgument for bad options, Unavailable when the address
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpFrontend>> Start(HttpFrontendOptions options);
  ~HttpFrontend();

  int port() const { return port_; }
  void Shutdown();

 private:
  explicit HttpFrontend(HttpFrontendOptions options);
  void Register();

  const HttpFrontendOptions options_;
  std::unique_ptr<rpc::RouterService::Stub> stub_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  int port_ = 0;
};

}  // namespace semmoe::router::http

#endif  // SEMMOE_ROUTER_HTTP_HTTP_FRONTEND_H_
