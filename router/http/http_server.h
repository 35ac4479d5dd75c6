// An event-driven HTTP/1.1 server on Boost.Beast and Boost.Asio (Debian's libboost1.81-dev):
// a few I/O threads serve every connection, so an open connection (an SSE stream waiting for its
// next token, a client trickling its headers) costs memory, not a thread. It knows nothing of
// what it serves: a handler gets each whole request and answers through an HttpResponse, whole
// or streamed (chunked), from any thread.
//
// Why Beast: its parser takes limits on the header and body sizes and decodes chunked request
// bodies, a connection's reads and writes carry their own deadlines (beast::tcp_stream), TLS is
// Asio's OpenSSL stream, and a parser can be fed bytes in-process (the fuzzer's harness).
// libevent's evhttp has neither per-phase timeouts for a request nor streamed responses over TLS.
//
// Limits (HttpLimits): connections (more are closed at once and counted), header bytes (431),
// body bytes (413, refused from Content-Length before the body is read), requests per connection
// (then "Connection: close"), and deadlines: the headers must arrive within `header_timeout` of
// the connection (of the previous response, within `idle_timeout`, on a kept-alive one), the body
// within `body_timeout`, and each response write must make progress within `write_timeout` (a
// client that stops reading is dropped). While a response is produced the server keeps reading:
// a client that closes its connection is noticed at once and its response abandoned
// (HttpResponse::OnAbandon), even before the first byte of the answer.
//
// Thread-safe. Shutdown() (also the destructor) stops accepting, abandons every response in
// flight, closes every connection and joins the I/O threads.
#ifndef SEMMOE_ROUTER_HTTP_HTTP_SERVER_H_
#define SEMMOE_ROUTER_HTTP_HTTP_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace semmoe::router::http {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpLimits {
  int max_connections = 16384;
  int64_t max_header_bytes = 16 << 10;
  int64_t max_body_bytes = 32 << 20;
  int max_requests_per_connection = 10000;
  absl::Duration header_timeout = absl::Seconds(10);
  absl::Duration idle_timeout = absl::Seconds(30);
  absl::Duration body_timeout = absl::Seconds(60);
  absl::Duration write_timeout = absl::Seconds(30);
};

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // As sent: "/v1/models?x=1".
  std::string path;    // Without the query: "/v1/models".
  HttpHeaders headers;
  std::string body;  // Decoded (a chunked body arrives whole).
  // The value of header `name` (case-insensitive), "" when absent.
  std::string Header(std::string_view name) const;
};

// How a handler answers one request. Thread-safe; every method returns at once (the connection's
// own strand writes). Exactly one of Send, or StartStream + Write* + End. Once the client has
// gone, they do nothing.
class HttpResponse {
 public:
  virtual ~HttpResponse() = default;
  virtual void Send(int status, std::string content_type, std::string body,
                    HttpHeaders headers = {}) = 0;
  // A streamed answer with chunked transfer encoding: the head now, each Write as a chunk.
  virtual void StartStream(int status, std::string content_type, HttpHeaders headers = {}) = 0;
  virtual void Write(std::string piece) = 0;
  virtual void End() = 0;
  // The last safety net (an exception escaped the handler): answers `status` with `body` when
  // nothing was sent yet; a stream that has begun is ended (its client sees it cut short). Does
  // nothing once the response has ended.
  virtual void Fail(int status, std::string content_type, std::string body) = 0;
  // `on_abandon` runs once, on an I/O thread, if the client goes away (or the server shuts down)
  // before the response has ended — at once if it already has. Never after End or Send.
  virtual void OnAbandon(std::function<void()> on_abandon) = 0;
};

// Called on an I/O thread for each whole request; must not block (answer later, from any
// thread, through `response`).
using HttpHandler =
    std::function<void(HttpRequest request, std::shared_ptr<HttpResponse> response)>;
// The body of an error the server answers itself (400, 404, 405, 413, 431): content type and
// text. Null: a JSON object {"error": {"message": ...}}.
using HttpErrorBody =
    std::function<std::pair<std::string, std::string>(int status, const std::string& message)>;

struct HttpServerOptions {
  std::string listen = "127.0.0.1";
  int port = 0;     // 0: any free port (port()).
  int threads = 2;  // I/O threads.
  HttpLimits limits;
  // PEM files for HTTPS; both empty: plain HTTP.
  std::string tls_cert_file, tls_key_file;
  HttpHandler handler;  // Required.
  HttpErrorBody error_body;
};

// What the server has seen since it started (for /metrics).
struct HttpCounters {
  int64_t connections_open = 0;
  int64_t connections_accepted = 0;
  int64_t connections_refused = 0;  // Past max_connections.
  int64_t requests = 0;
  int64_t timeouts = 0;          // Connections dropped by a header, body or write deadline.
  int64_t refused_requests = 0;  // 400, 413, 431 answered by the server itself.
  int64_t abandoned = 0;         // Responses whose client went away before their end.
  int64_t handler_exceptions = 0;  // Handlers an exception escaped (answered 500; a bug).
};

class HttpServer {
 public:
  // Binds and starts the I/O threads. InvalidArgument for bad options or unusable TLS files,
  // Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options);
  ~HttpServer();

  int port() const;
  HttpCounters counters() const;
  void Shutdown();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// For the fuzzer: runs `bytes` through one connection as if a client had sent them and closed
// its side, in-process and without a socket (an in-memory stream), handlers included; returns
// what the server wrote back. Deadlines do not apply. Waits for the handlers' answers at most
// `wait` (an answer given later is dropped).
std::string ServeBytesForTesting(const HttpServerOptions& options, std::string_view bytes,
                                 absl::Duration wait = absl::Seconds(5));

}  // namespace semmoe::router::http

#endif  // SEMMOE_ROUTER_HTTP_HTTP_SERVER_H_
