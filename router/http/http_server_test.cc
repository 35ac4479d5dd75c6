// The event-driven HTTP server over real loopback sockets (raw bytes, so every limit and deadline
// is reached exactly): whole and streamed answers, keep-alive, chunked request bodies, the size
// limits, header and idle deadlines, abandon on disconnect, many idle connections, and the
// in-memory harness the fuzzer uses. TLS is checked end to end by tests/tls_test.sh.
#include "router/http/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::router::http {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A blocking loopback client speaking raw bytes.
class Client {
 public:
  explicit Client(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~Client() { Close(); }
  bool connected() const { return connected_; }
  void Send(const std::string& s) { (void)!write(fd_, s.data(), s.size()); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  // Reads until `until` appears in what was read, the peer closes, or `timeout`.
  std::string ReadUntil(const std::string& until, absl::Duration timeout = absl::Seconds(10)) {
    const absl::Time end = absl::Now() + timeout;
    while (got_.find(until) == std::string::npos && absl::Now() < end) {
      if (!ReadSome(end)) break;
    }
    return got_;
  }
  // True when the peer closed the connection within `timeout`.
  bool ClosedWithin(absl::Duration timeout) {
    const absl::Time end = absl::Now() + timeout;
    while (absl::Now() < end) {
      if (!ReadSome(end)) return eof_;
    }
    return false;
  }
  const std::string& got() const { return got_; }

 private:
  bool ReadSome(absl::Time end) {
    pollfd p{.fd = fd_, .events = POLLIN};
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(end - absl::Now()));
    if (poll(&p, 1, std::max(ms, 0)) <= 0) return false;
    char buf[65536];
    const ssize_t n = read(fd_, buf, sizeof buf);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    got_.append(buf, n);
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string got_;
};

std::string Post(const std::string& path, const std::string& body, bool close = false) {
  return absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: x\r\nContent-Length: ", body.size(),
                      close ? "\r\nConnection: close" : "", "\r\n\r\n", body);
}

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpLimits limits = {}) {
    auto s =
        HttpServer::Start({.port = 0,
                           .limits = limits,
                           .handler = [this](HttpRequest r, std::shared_ptr<HttpResponse> res) {
                             Handle(std::move(r), std::move(res));
                           }});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }

  // /echo: the body back; /stream: three chunks; /hold: kept until release_ (or abandoned).
  void Handle(HttpRequest r, std::shared_ptr<HttpResponse> res) {
    if (r.path == "/echo") {
      return res->Send(
          200, "text/plain",
          absl::StrCat(r.method, " ", r.target, " [", r.Header("x-test"), "] ", r.body));
    }
    if (r.path == "/stream") {
      res->StartStream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
      std::thread([res] {  // From another thread, as the router's calls answer.
        for (const char* piece : {"data: a\n\n", "data: b\n\n", "data: [DONE]\n\n"}) {
          res->Write(piece);
          absl::SleepFor(absl::Milliseconds(5));
        }
        res->End();
      })
          .detach();
      return;
    }
    if (r.path == "/throw") throw std::runtime_error("a bug in a handler");
    if (r.path == "/throw_mid_stream") {
      res->StartStream(200, "text/event-stream");
      res->Write("data: a\n\n");
      throw std::runtime_error("a bug mid-stream");
    }
    if (r.path == "/hold") {
      res->OnAbandon([this] { abandoned_.Notify(); });
      held_ = res;
      held_notification_.Notify();
      return;
    }
    res->Send(404, "text/plain", "no");
  }

  std::unique_ptr<HttpServer> server_;
  absl::Notification abandoned_, held_notification_;
  std::shared_ptr<HttpResponse> held_;
};

TEST_F(HttpServerTest, AnswersWholeAndKeepsTheConnectionAlive) {
  Start();
  Client c(server_->port());
  ASSERT_TRUE(c.connected());
  c.Send(absl::StrCat(Post("/echo?q=1", "hello"), Post("/echo", "again")));  // Pipelined.
  const std::string got = c.ReadUntil("again");
  EXPECT_THAT(got, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(got, HasSubstr("Content-Length: 23\r\n"));
  EXPECT_THAT(got, HasSubstr("POST /echo?q=1 [] hello"));
  EXPECT_THAT(got, HasSubstr("POST /echo [] again"));
  EXPECT_EQ(server_->counters().requests, 2);
  c.Send(Post("/echo", "last", /*close=*/true));
  EXPECT_TRUE(c.ClosedWithin(absl::Seconds(5)));
  EXPECT_THAT(c.got(), HasSubstr("Connection: close\r\n\r\nPOST /echo [] last"));
}

TEST_F(HttpServerTest, StreamsChunksAndDecodesChunkedRequests) {
  Start();
  Client c(server_->port());
  c.Send(
      "POST /stream HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
      "chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  const std::string got = c.ReadUntil("0\r\n\r\n");
  EXPECT_THAT(got, HasSubstr("Transfer-Encoding: chunked\r\n"));
  EXPECT_THAT(got, HasSubstr("Cache-Control: no-cache\r\n"));
  EXPECT_THAT(
      got, HasSubstr("9\r\ndata: a\n\n\r\n9\r\ndata: b\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"));
  Client d(server_->port());
  d.Send(
      "POST /echo HTTP/1.1\r\nHost: x\r\nX-Test: t\r\nTransfer-Encoding: chunked\r\n\r\n"
      "2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n");
  EXPECT_THAT(d.ReadUntil("cde"), HasSubstr("[t] abcde"));
}

TEST_F(HttpServerTest, RefusesWhatPassesTheLimits) {
  Start({.max_header_bytes = 1024, .max_body_bytes = 100});
  {
    Client c(server_->port());  // Refused from Content-Length, before any body byte.
    c.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n");
    EXPECT_TRUE(c.ClosedWithin(absl::Seconds(5)));
    EXPECT_THAT(c.got(), StartsWith("HTTP/1.1 413 Payload Too Large\r\n"));
    EXPECT_THAT(c.got(), HasSubstr("passes the server's limit of 100 bytes"));
  }
  {
    Client c(server_->port());  // A chunked body that grows past the limit.
    c.Send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n" +
           std::string(100, 'a') + "\r\n64\r\n" + std::string(100, 'a') + "\r\n0\r\n\r\n");
    EXPECT_TRUE(c.ClosedWithin(absl::Seconds(5)));
    EXPECT_THAT(c.got(), StartsWith("HTTP/1.1 413"));
  }
  {
    Client c(server_->port());
    c.Send("GET /echo HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4000, 'b') + "\r\n\r\n");
    EXPECT_TRUE(c.ClosedWithin(absl::Seconds(5)));
    EXPECT_THAT(c.got(), StartsWith("HTTP/1.1 431"));
  }
  {
    Client c(server_->port());
    c.Send("NOT HTTP AT ALL\r\n\r\n");
    EXPECT_TRUE(c.ClosedWithin(absl::Seconds(5)));
    EXPECT_THAT(c.got(), StartsWith("HTTP/1.1 400"));
    EXPECT_THAT(c.got(), HasSubstr(R"({"error":{"message":"malformed HTTP request)"));
  }
  EXPECT_EQ(server_->counters().refused_requests, 4);
}

TEST_F(HttpServerTest, AnswersContinueBeforeTheBody) {
  Start();
  Client c(server_->port());
  c.Send("POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  EXPECT_THAT(c.ReadUntil("\r\n\r\n"), StartsWith("HTTP/1.1 100 Continue\r\n\r\n"));
  c.Send("ok");
  EXPECT_THAT(c.ReadUntil("] ok"), HasSubstr("200 OK"));
}

// Slow clients cost no thread: while hundreds trickle their headers, a request is answered at
// once; each trickler is dropped at its header deadline.
TEST_F(HttpServerTest, SlowHeadersAreDroppedAtTheirDeadlineWithoutBlockingOthers) {
  Start({.header_timeout = absl::Milliseconds(600)});
  std::vector<std::unique_ptr<Client>> slow;
  for (int i = 0; i < 300; ++i) {
    slow.push_back(std::make_unique<Client>(server_->port()));
    slow.back()->Send("GET /echo HTTP/1.1\r\nHost: x\r\n");  // Never finished.
  }
  const absl::Time start = absl::Now();
  Client fast(server_->port());
  fast.Send(Post("/echo", "quick"));
  EXPECT_THAT(fast.ReadUntil("quick"), HasSubstr("200 OK"));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
  for (auto& c : slow) EXPECT_TRUE(c->ClosedWithin(absl::Seconds(10)));
  EXPECT_GE(server_->counters().timeouts, 300);
}

TEST_F(HttpServerTest, AnIdleKeptAliveConnectionIsClosed) {
  Start({.idle_timeout = absl::Milliseconds(300)});
  Client c(server_->port());
  c.Send(Post("/echo", "one"));
  EXPECT_THAT(c.ReadUntil("one"), HasSubstr("200 OK"));
  EXPECT_TRUE(c.ClosedWithin(absl::Seconds(5)));
}

// A client that leaves before its answer is noticed at once (the server keeps reading), and the
// handler's response is abandoned: what the router turns into a cancelled engine call.
TEST_F(HttpServerTest, AClientThatLeavesAbandonsItsResponse) {
  Start();
  Client c(server_->port());
  c.Send(Post("/hold", "x"));
  ASSERT_TRUE(held_notification_.WaitForNotificationWithTimeout(absl::Seconds(5)));
  c.Close();
  EXPECT_TRUE(abandoned_.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(server_->counters().abandoned, 1);
  held_->Send(200, "text/plain", "too late");  // Does nothing, crashes nothing.
  // OnAbandon after the fact runs at once.
  absl::Notification late;
  held_->OnAbandon([&late] { late.Notify(); });
  EXPECT_TRUE(late.HasBeenNotified());
}

TEST_F(HttpServerTest, ConnectionsPastTheLimitAreClosed) {
  Start({.max_connections = 5});
  std::vector<std::unique_ptr<Client>> open;
  for (int i = 0; i < 5; ++i) {
    open.push_back(std::make_unique<Client>(server_->port()));
    open.back()->Send(Post("/echo", "x"));
    EXPECT_THAT(open.back()->ReadUntil("] x"), HasSubstr("200 OK"));
  }
  Client extra(server_->port());
  EXPECT_TRUE(extra.ClosedWithin(absl::Seconds(5)));
  EXPECT_EQ(server_->counters().connections_refused, 1);
  open.clear();
  // Closed connections free their places.
  for (absl::Time end = absl::Now() + absl::Seconds(5);
       server_->counters().connections_open > 0 && absl::Now() < end;) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  Client again(server_->port());
  again.Send(Post("/echo", "y"));
  EXPECT_THAT(again.ReadUntil("] y"), HasSubstr("200 OK"));
}

TEST_F(HttpServerTest, ShutdownAbandonsResponsesInFlight) {
  Start();
  Client c(server_->port());
  c.Send(Post("/hold", "x"));
  ASSERT_TRUE(held_notification_.WaitForNotificationWithTimeout(absl::Seconds(5)));
  server_->Shutdown();
  EXPECT_TRUE(abandoned_.HasBeenNotified());
  EXPECT_TRUE(c.ClosedWithin(absl::Seconds(5)));
}

TEST(HttpServerHarnessTest, ServesBytesInProcess) {
  HttpServerOptions o{.handler = [](HttpRequest r, std::shared_ptr<HttpResponse> res) {
    res->Send(200, "text/plain", r.body);
  }};
  const std::string out = ServeBytesForTesting(o, Post("/a", "one") + Post("/b", "two"));
  EXPECT_THAT(out, HasSubstr("Content-Length: 3\r\n\r\none"));
  EXPECT_THAT(out, HasSubstr("Content-Length: 3\r\n\r\ntwo"));
  EXPECT_THAT(ServeBytesForTesting(o, "GET / HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(ServeBytesForTesting(o, "\x01\x02garbage"), StartsWith("HTTP/1.1 400"));
  EXPECT_EQ(ServeBytesForTesting(o, ""), "");
}

// An exception escaping a handler fails that request alone: a 500 (or a begun stream ended), a
// counter, and the server goes on serving on the same connection and others.
TEST_F(HttpServerTest, AnExceptionInAHandlerIsA500NotTheEndOfTheServer) {
  Start();
  Client c(server_->port());
  c.Send(Post("/throw", "x"));
  EXPECT_THAT(c.ReadUntil("}"), StartsWith("HTTP/1.1 500"));
  EXPECT_EQ(server_->counters().handler_exceptions, 1);
  Client s(server_->port());
  s.Send(Post("/throw_mid_stream", "x", /*close=*/true));
  // The stream's head and first event went out; the stream is then ended (chunked terminator).
  EXPECT_THAT(s.ReadUntil("0\r\n\r\n"), HasSubstr("data: a"));
  EXPECT_EQ(server_->counters().handler_exceptions, 2);
  Client d(server_->port());
  d.Send(Post("/echo", "still here"));
  EXPECT_THAT(d.ReadUntil("still here"), StartsWith("HTTP/1.1 200"));
}

}  // namespace
}  // namespace semmoe::router::http
