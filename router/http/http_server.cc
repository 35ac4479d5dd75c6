#include "router/http/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <deque>
#include <optional>
#include <system_error>
#include <thread>
#include <type_traits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/escaped_exception.h"
#include "nlohmann/json.hpp"

namespace semmoe::router::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

std::string HttpRequest::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (absl::EqualsIgnoreCase(k, absl::string_view(name.data(), name.size()))) return v;
  }
  return "";
}

namespace {

std::string Str(beast::string_view v) { return std::string(v.data(), v.size()); }

// One piece of a response, handed from any thread to the connection's strand.
struct Piece {
  enum class Kind { kWhole, kHead, kChunk, kEnd };
  Kind kind = Kind::kWhole;
  int status = 200;
  std::string content_type;
  HttpHeaders headers;
  std::string body;
};

// A connection as its responses and the server see it (Session<Stream> is templated on the
// stream: TCP, TLS over TCP, or the fuzzer's in-memory stream).
class Connection {
 public:
  virtual ~Connection() = default;
  // Posted onto the connection's strand.
  virtual void Post(Piece piece) = 0;
  virtual void Abort() = 0;
};

// What every connection shares with the server.
struct Shared {
  explicit Shared(HttpServerOptions o) : options(std::move(o)) {}
  const HttpServerOptions options;
  bool testing = false;  // No deadlines (the fuzzer's in-memory stream).
  std::atomic<int64_t> open{0}, accepted{0}, refused{0}, requests{0}, timeouts{0},
      refused_requests{0}, abandoned{0}, handler_exceptions{0};
  absl::Mutex mu;
  uint64_t next_id ABSL_GUARDED_BY(mu) = 0;
  absl::flat_hash_map<uint64_t, std::weak_ptr<Connection>> connections ABSL_GUARDED_BY(mu);
  bool stopping ABSL_GUARDED_BY(mu) = false;
  std::function<void()> on_connection_end;  // Testing: the harness stops its loop.

  std::pair<std::string, std::string> ErrorBody(int status, const std::string& message) const {
    if (options.error_body) return options.error_body(status, message);
    return {"application/json", nlohmann::json{{"error", {{"message", message}}}}.dump(
                                    -1, ' ', false, nlohmann::json::error_handler_t::replace)};
  }
};

// The handler's side of one response. Holds its connection until the response ends or is
// abandoned (a handler may answer long after the request: the connection must still be there).
class ResponseImpl : public HttpResponse {
 public:
  explicit ResponseImpl(std::shared_ptr<Connection> connection)
      : connection_(std::move(connection)) {}

  void Send(int status, std::string content_type, std::string body, HttpHeaders headers) override {
    Deliver({.kind = Piece::Kind::kWhole,
             .status = status,
             .content_type = std::move(content_type),
             .headers = std::move(headers),
             .body = std::move(body)},
            /*last=*/true);
  }
  void StartStream(int status, std::string content_type, HttpHeaders headers) override {
    {
      absl::MutexLock lock(&mu_);
      started_ = true;
    }
    Deliver({.kind = Piece::Kind::kHead,
             .status = status,
             .content_type = std::move(content_type),
             .headers = std::move(headers)},
            false);
  }
  void Write(std::string piece) override {
    if (piece.empty()) return;  // An empty chunk would end the stream.
    Deliver({.kind = Piece::Kind::kChunk, .body = std::move(piece)}, false);
  }
  void End() override { Deliver({.kind = Piece::Kind::kEnd}, true); }
  void Fail(int status, std::string content_type, std::string body) override {
    bool started;
    {
      absl::MutexLock lock(&mu_);
      started = started_;
    }
    if (started) return End();
    Send(status, std::move(content_type), std::move(body), {});
  }

  void OnAbandon(std::function<void()> on_abandon) override {
    {
      absl::MutexLock lock(&mu_);
      if (ended_) return;
      if (!abandoned_) {
        on_abandon_ = std::move(on_abandon);
        return;
      }
    }
    on_abandon();
  }

  // The connection's side: the client went away before the end.
  void Abandon() {
    std::function<void()> f;
    {
      absl::MutexLock lock(&mu_);
      if (ended_ || abandoned_) return;
      abandoned_ = true;
      f = std::move(on_abandon_);
      on_abandon_ = nullptr;
      connection_ = nullptr;
    }
    if (f) f();
  }

 private:
  void Deliver(Piece piece, bool last) {
    std::shared_ptr<Connection> connection;
    {
      absl::MutexLock lock(&mu_);
      if (ended_ || abandoned_) return;
      connection = connection_;
      if (last) {
        ended_ = true;
        on_abandon_ = nullptr;  // Whatever it holds (the call) is released with the end.
        connection_ = nullptr;
      }
    }
    if (connection != nullptr) connection->Post(std::move(piece));
  }

  absl::Mutex mu_;
  std::shared_ptr<Connection> connection_ ABSL_GUARDED_BY(mu_);
  std::function<void()> on_abandon_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool abandoned_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;  // StartStream was called.
};

std::string Head(int status, const std::string& content_type, const HttpHeaders& headers,
                 bool keep_alive, std::optional<size_t> content_length) {
  const std::string reason = Str(bhttp::obsolete_reason(static_cast<bhttp::status>(status)));
  std::string head =
      absl::StrCat("HTTP/1.1 ", status, " ", reason.empty() ? "Unknown" : reason, "\r\n");
  if (!content_type.empty()) absl::StrAppend(&head, "Content-Type: ", content_type, "\r\n");
  for (const auto& [k, v] : headers) absl::StrAppend(&head, k, ": ", v, "\r\n");
  if (content_length.has_value()) {
    absl::StrAppend(&head, "Content-Length: ", *content_length, "\r\n");
  } else {
    absl::StrAppend(&head, "Transfer-Encoding: chunked\r\n");
  }
  if (!keep_alive) absl::StrAppend(&head, "Connection: close\r\n");
  absl::StrAppend(&head, "\r\n");
  return head;
}

template <class Stream>
class Session : public Connection, public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(std::shared_ptr<Shared> shared, Stream stream, uint64_t id)
      : shared_(std::move(shared)),
        stream_(std::move(stream)),
        timer_(stream_.get_executor()),
        id_(id) {
    shared_->open.fetch_add(1);
  }
  ~Session() override {
    shared_->open.fetch_sub(1);
    {
      absl::MutexLock lock(&shared_->mu);
      shared_->connections.erase(id_);
    }
    if (shared_->on_connection_end) shared_->on_connection_end();
  }

  void Start() {
    if constexpr (kTls) {
      Arm(shared_->options.limits.header_timeout);
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return self->Close();
                                self->ReadHeader();
                              });
    } else {
      ReadHeader();
    }
  }

  void Post(Piece piece) override {
    net::post(stream_.get_executor(),
              [self = this->shared_from_this(), p = std::move(piece)]() mutable {
                self->Queue(std::move(p));
              });
  }

  void Abort() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] { self->Close(); });
  }

 private:
  using Lowest = std::decay_t<decltype(beast::get_lowest_layer(std::declval<Stream&>()))>;
  static constexpr bool kTls = !std::is_same_v<Stream, Lowest>;

  // One deadline at a time: headers (or idle), body, a write in progress. On expiry the
  // connection is closed, which ends whatever read or write is pending.
  void Arm(absl::Duration d) {
    if (shared_->testing) return;
    const uint64_t generation = ++timer_generation_;
    timer_.expires_after(absl::ToChronoNanoseconds(d));
    timer_.async_wait([self = this->shared_from_this(), generation](beast::error_code ec) {
      if (ec || generation != self->timer_generation_ || self->closed_) return;
      self->shared_->timeouts.fetch_add(1);
      self->Close();
    });
  }
  void Disarm() {
    ++timer_generation_;
    timer_.cancel();
  }

  void ReadHeader() {
    if (closed_) return;
    const HttpLimits& l = shared_->options.limits;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(std::min<int64_t>(l.max_header_bytes, UINT32_MAX)));
    parser_->body_limit(static_cast<uint64_t>(l.max_body_bytes));
    Arm(served_ == 0 ? l.header_timeout : l.idle_timeout);
    reading_ = true;
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = this->shared_from_this()](beast::error_code ec, size_t) {
                               self->reading_ = false;
                               self->OnHeader(ec);
                             });
  }

  void OnHeader(beast::error_code ec) {
    if (closed_) return;
    if (ec == bhttp::error::header_limit) {
      return Refuse(431, absl::StrCat("the request's headers pass the server's limit of ",
                                      shared_->options.limits.max_header_bytes, " bytes"));
    }
    if (ec == bhttp::error::body_limit) return TooLarge();  // Content-Length said so.
    if (ec) return ParseFailed(ec);
    const auto& header = parser_->get();
    if (const auto length = parser_->content_length();
        length && *length > static_cast<uint64_t>(shared_->options.limits.max_body_bytes)) {
      return TooLarge();
    }
    if (absl::EqualsIgnoreCase(Str(header[bhttp::field::expect]), "100-continue")) {
      // curl waits a second for this before sending a body of more than 1 KB.
      QueueBytes("HTTP/1.1 100 Continue\r\n\r\n");
    }
    Arm(shared_->options.limits.body_timeout);
    reading_ = true;
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = this->shared_from_this()](beast::error_code ec, size_t) {
                        self->reading_ = false;
                        self->OnBody(ec);
                      });
  }

  void OnBody(beast::error_code ec) {
    if (closed_) return;
    if (ec == bhttp::error::body_limit) return TooLarge();
    if (ec) return ParseFailed(ec);
    Disarm();
    bhttp::request<bhttp::string_body> message = parser_->release();
    parser_.reset();
    HttpRequest request;
    request.method = Str(message.method_string());
    request.target = Str(message.target());
    request.path = request.target.substr(0, request.target.find('?'));
    for (const auto& field : message) {
      request.headers.emplace_back(Str(field.name_string()), Str(field.value()));
    }
    request.body = std::move(message.body());
    ++served_;
    keep_alive_ =
        message.keep_alive() && served_ < shared_->options.limits.max_requests_per_connection;
    shared_->requests.fetch_add(1);
    in_response_ = true;
    response_ended_ = false;
    response_ = std::make_shared<ResponseImpl>(this->shared_from_this());
    if (!CatchEscaped("the HTTP handler", [&] {
           shared_->options.handler(std::move(request), response_);
         }).empty()) {
      shared_->handler_exceptions.fetch_add(1);
      auto [type, body] = shared_->ErrorBody(500, "internal server error (logged)");
      response_->Fail(500, std::move(type), std::move(body));
    }
    Watch();  // After the handler: an answer it gave at once is queued before a close is seen.
  }

  // A bad request line or header: 400 unless the client simply left (EOF between requests).
  void ParseFailed(beast::error_code ec) {
    if (ec == bhttp::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset ||
        ec == beast::error::timeout) {
      return Close();
    }
    Refuse(400, absl::StrCat("malformed HTTP request: ", ec.message()));
  }

  void TooLarge() {
    Refuse(413, absl::StrCat("the request body passes the server's limit of ",
                             shared_->options.limits.max_body_bytes, " bytes"));
  }

  // The server's own answer to a request it will not read further; the connection then closes.
  void Refuse(int status, const std::string& message) {
    shared_->refused_requests.fetch_add(1);
    keep_alive_ = false;
    in_response_ = true;
    response_ended_ = true;
    auto [type, body] = shared_->ErrorBody(status, message);
    std::string head = Head(status, type, {}, false, body.size());
    QueueBytes(head + body);
  }

  // While a response is produced: a read that notices a client that leaves (and keeps the
  // bytes of a pipelined next request).
  void Watch() {
    // Bytes of a pipelined request already wait in the buffer: they are served next, and the
    // client's leaving is noticed when they are read.
    if (closed_ || reading_ || buffer_.size() > 0) return;
    reading_ = true;
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              self->reading_ = false;
                              self->OnWatch(ec, n);
                            });
  }

  void OnWatch(beast::error_code ec, size_t n) {
    if (closed_) return;
    if (ec) {
      // Gone. What is queued of a finished response still goes out; an unfinished one is
      // abandoned.
      peer_closed_ = true;
      if (!response_ended_ || !in_response_) return Close();
      if (!writing_ && out_.empty()) AfterResponse();
      return;
    }
    buffer_.commit(n);
    if (!response_ended_) return;     // A pipelined request: served after this response.
    if (!in_response_) ReadHeader();  // The response went out while this read waited.
  }

  // The response is out: the next request (pipelined bytes are served even after the client
  // closed its side), or the end.
  void AfterResponse() {
    in_response_ = false;
    response_ = nullptr;
    if (peer_closed_) return buffer_.size() > 0 ? ReadHeader() : Close();
    if (!keep_alive_) return Close();
    if (!reading_) return ReadHeader();
    // The watch's read goes on into the next request: idle until its bytes come.
    Arm(shared_->options.limits.idle_timeout);
  }

  void Queue(Piece p) {
    if (closed_ || response_ended_) return;
    switch (p.kind) {
      case Piece::Kind::kWhole:
        response_ended_ = true;
        QueueBytes(Head(p.status, p.content_type, p.headers, keep_alive_, p.body.size()) + p.body);
        break;
      case Piece::Kind::kHead:
        QueueBytes(Head(p.status, p.content_type, p.headers, keep_alive_, std::nullopt));
        break;
      case Piece::Kind::kChunk:
        QueueBytes(absl::StrCat(absl::Hex(p.body.size()), "\r\n", p.body, "\r\n"));
        break;
      case Piece::Kind::kEnd:
        response_ended_ = true;
        QueueBytes("0\r\n\r\n");
        break;
    }
  }

  void QueueBytes(std::string bytes) {
    out_.push_back(std::move(bytes));
    WriteNext();
  }

  void WriteNext() {
    if (closed_ || writing_ || out_.empty()) return;
    writing_ = true;
    Arm(shared_->options.limits.write_timeout);
    net::async_write(stream_, net::buffer(out_.front()),
                     [self = this->shared_from_this()](beast::error_code ec, size_t) {
                       self->writing_ = false;
                       self->OnWrite(ec);
                     });
  }

  void OnWrite(beast::error_code ec) {
    if (closed_) return;
    if (ec) return Close();
    Disarm();
    out_.pop_front();
    if (!out_.empty()) return WriteNext();
    if (in_response_ && response_ended_) AfterResponse();
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    Disarm();
    if (response_ != nullptr && !response_ended_) shared_->abandoned.fetch_add(1);
    if (std::shared_ptr<ResponseImpl> r = std::move(response_); r != nullptr) r->Abandon();
    beast::error_code ignored;
    if constexpr (std::is_same_v<Lowest, beast::test::stream>) {
      stream_.close();
    } else {
      auto& socket = beast::get_lowest_layer(stream_).socket();
      socket.shutdown(tcp::socket::shutdown_both, ignored);
      socket.close(ignored);
    }
  }

  const std::shared_ptr<Shared> shared_;
  Stream stream_;
  net::steady_timer timer_;
  const uint64_t id_;
  uint64_t timer_generation_ = 0;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<ResponseImpl> response_;  // The response being produced or written.
  std::deque<std::string> out_;             // Bytes to write, in order.
  int served_ = 0;
  bool keep_alive_ = false;
  bool in_response_ = false;  // From a request's dispatch until its response is written.
  bool response_ended_ = true;
  bool reading_ = false;
  bool writing_ = false;
  bool peer_closed_ = false;
  bool closed_ = false;
};

// Registers a connection for Shutdown; false when the server is stopping.
bool Register(Shared& shared, uint64_t* id) {
  absl::MutexLock lock(&shared.mu);
  if (shared.stopping) return false;
  *id = ++shared.next_id;
  return true;
}

}  // namespace

struct HttpServer::Impl {
  explicit Impl(HttpServerOptions options)
      : shared(std::make_shared<Shared>(std::move(options))),
        acceptor(net::make_strand(ioc)),
        accept_pause(acceptor.get_executor()),
        work(net::make_work_guard(ioc)) {}

  void Accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) {
        Admit(std::move(socket));
        return Accept();
      }
      // Out of descriptors (EMFILE) or memory: accepting again at once would spin. The
      // connections waiting in the backlog are taken when some close.
      shared->refused.fetch_add(1);
      accept_pause.expires_after(std::chrono::milliseconds(50));
      accept_pause.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec) Accept();
      });
    });
  }

  void Admit(tcp::socket socket) {
    shared->accepted.fetch_add(1);
    beast::error_code ignored;
    uint64_t id = 0;
    if (shared->open.load() >= shared->options.limits.max_connections || !Register(*shared, &id)) {
      shared->refused.fetch_add(1);
      socket.close(ignored);
      return;
    }
    socket.set_option(tcp::no_delay(true), ignored);  // SSE events are small writes.
    std::shared_ptr<Connection> connection;
    if (tls.has_value()) {
      auto s = std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
          shared, beast::ssl_stream<beast::tcp_stream>(beast::tcp_stream(std::move(socket)), *tls),
          id);
      connection = s;
      Track(id, connection);
      s->Start();
    } else {
      auto s = std::make_shared<Session<beast::tcp_stream>>(
          shared, beast::tcp_stream(std::move(socket)), id);
      connection = s;
      Track(id, connection);
      s->Start();
    }
  }

  void Track(uint64_t id, const std::shared_ptr<Connection>& c) {
    absl::MutexLock lock(&shared->mu);
    shared->connections[id] = c;
  }

  net::io_context ioc;
  std::shared_ptr<Shared> shared;
  std::optional<ssl::context> tls;
  tcp::acceptor acceptor;
  net::steady_timer accept_pause;  // After a failed accept.
  net::executor_work_guard<net::io_context::executor_type> work;
  std::vector<std::thread> threads;
  int port = 0;
  bool shut_down = false;
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Shutdown(); }

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options) {
  if (!options.handler) return absl::InvalidArgumentError("the HTTP server needs a handler");
  if (options.threads < 1) return absl::InvalidArgumentError("HTTP threads must be ≥ 1");
  if (options.port < 0 || options.port > 65535) {  // Asio would take it modulo 65536.
    return absl::InvalidArgumentError(absl::StrCat(
        "HTTP port ", options.port, " is not a TCP port (0 to 65535; 0: any free one)"));
  }
  const HttpLimits& l = options.limits;
  if (l.max_connections < 1 || l.max_header_bytes < 256 || l.max_body_bytes < 1 ||
      l.max_requests_per_connection < 1) {
    return absl::InvalidArgumentError(
        "HTTP limits: connections and requests per connection must be ≥ 1, header bytes ≥ 256, "
        "body bytes ≥ 1");
  }
  for (absl::Duration d : {l.header_timeout, l.idle_timeout, l.body_timeout, l.write_timeout}) {
    if (!(d > absl::ZeroDuration() && d < absl::Hours(24))) {
      return absl::InvalidArgumentError(
          "HTTP timeouts (header, idle, body, write) must be more than 0 and less than a day");
    }
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError("HTTPS needs both a certificate and a key file");
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  const HttpServerOptions& o = impl->shared->options;
  if (!o.tls_cert_file.empty()) {
    impl->tls.emplace(ssl::context::tls_server);
    beast::error_code ec;
    impl->tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                               ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                               ssl::context::no_tlsv1_1,
                           ec);
    if (!ec) impl->tls->use_certificate_chain_file(o.tls_cert_file, ec);
    if (!ec) impl->tls->use_private_key_file(o.tls_key_file, ssl::context::pem, ec);
    if (ec) {
      return absl::InvalidArgumentError(absl::StrCat("HTTPS: cannot use the certificate ",
                                                     o.tls_cert_file, " and key ", o.tls_key_file,
                                                     ": ", ec.message()));
    }
  }
  beast::error_code ec;
  const net::ip::address address =
      net::ip::make_address(o.listen == "localhost" ? "127.0.0.1" : o.listen, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("HTTP: bad address '", o.listen, "'"));
  const tcp::endpoint endpoint(address, static_cast<uint16_t>(o.port));
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("HTTP: cannot listen on ", o.listen, ":", o.port, ": ", ec.message()));
  }
  impl->port = impl->acceptor.local_endpoint().port();
  impl->Accept();
  try {
    for (int i = 0; i < o.threads; ++i) {
      impl->threads.emplace_back([ioc = &impl->ioc] { ioc->run(); });
    }
  } catch (const std::system_error& e) {
    // As many threads as asked could not start: stop those that did, and say so.
    impl->ioc.stop();
    for (std::thread& t : impl->threads) t.join();
    impl->threads.clear();
    return absl::ResourceExhaustedError(
        absl::StrCat("HTTP: cannot start ", o.threads, " I/O threads: ", e.what()));
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int HttpServer::port() const { return impl_->port; }

HttpCounters HttpServer::counters() const {
  const Shared& s = *impl_->shared;
  return {.connections_open = s.open.load(),
          .connections_accepted = s.accepted.load(),
          .connections_refused = s.refused.load(),
          .requests = s.requests.load(),
          .timeouts = s.timeouts.load(),
          .refused_requests = s.refused_requests.load(),
          .abandoned = s.abandoned.load(),
          .handler_exceptions = s.handler_exceptions.load()};
}

void HttpServer::Shutdown() {
  if (impl_->shut_down) return;
  impl_->shut_down = true;
  net::post(impl_->acceptor.get_executor(), [impl = impl_.get()] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
    impl->accept_pause.cancel();
  });
  std::vector<std::shared_ptr<Connection>> open;
  {
    absl::MutexLock lock(&impl_->shared->mu);
    impl_->shared->stopping = true;
    for (auto& [id, weak] : impl_->shared->connections) {
      if (auto c = weak.lock(); c != nullptr) open.push_back(std::move(c));
    }
  }
  for (auto& c : open) c->Abort();
  open.clear();
  // Every connection closes (its reads and writes end), so the loop runs out of work.
  impl_->work.reset();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
}

std::string ServeBytesForTesting(const HttpServerOptions& options, std::string_view bytes,
                                 absl::Duration wait) {
  net::io_context ioc;
  auto shared = std::make_shared<Shared>(options);
  shared->testing = true;
  auto work = net::make_work_guard(ioc);
  shared->on_connection_end = [&work] { work.reset(); };
  beast::test::stream client(ioc);
  std::string written;
  {
    beast::test::stream server_side(ioc);
    server_side.connect(client);
    server_side.append(beast::string_view(bytes.data(), bytes.size()));
    server_side.close_remote();
    uint64_t id = 0;
    Register(*shared, &id);
    auto session =
        std::make_shared<Session<beast::test::stream>>(shared, std::move(server_side), id);
    {
      absl::MutexLock lock(&shared->mu);
      shared->connections[id] = session;
    }
    session->Start();
  }
  ioc.run_for(absl::ToChronoNanoseconds(wait));
  written = std::string(client.str());
  // An answer that never came: close what is left, so nothing outlives the loop.
  std::vector<std::shared_ptr<Connection>> open;
  {
    absl::MutexLock lock(&shared->mu);
    for (auto& [id, weak] : shared->connections) {
      if (auto c = weak.lock(); c != nullptr) open.push_back(std::move(c));
    }
  }
  for (auto& c : open) c->Abort();
  open.clear();
  shared->on_connection_end = nullptr;
  ioc.restart();
  ioc.run_for(std::chrono::milliseconds(100));
  return written;
}

}  // namespace semmoe::router::http
