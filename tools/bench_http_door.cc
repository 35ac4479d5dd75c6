// bench_http_door: the router's HTTP door under many connections at once, from one thread (poll
// over non-blocking sockets: thousands of connections cost this client nothing either).
//
//   streams: `--streams N` streaming completions sent at once, each on its own connection.
//     Prints the time to the first SSE event carrying text (TTFB) p50/p99/max, the largest gap
//     between two consecutive sorted TTFBs (a second wave — streams waiting for others to end —
//     shows as one large gap), the end-to-end times, errors, and with `--router_pid` the router's
//     resident memory before, at the moment every stream had its first token, and its growth
//     per open stream.
//   slow: `--slow N --slow_s S` connections that send their headers one byte a second for S
//     seconds, while /health is asked every 100 ms and ordinary completions run one after
//     another; prints /health's latency p50/p99/max and the completions' TTFT against the same
//     completions measured before the slow clients connected.
//
//   bench_http_door --http HOST:PORT --streams 2000 [--max_tokens 32] [--router_pid PID]
//   bench_http_door --http HOST:PORT --slow 1000 --slow_s 30
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/proc_status.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, http, "", "the router's HTTP address (host:port, IPv4)");
ABSL_FLAG(int, streams, 0, "streaming completions sent at once");
ABSL_FLAG(int, max_tokens, 32, "tokens per completion");
ABSL_FLAG(std::string, prompt, "The history of the", "the completions' prompt");
ABSL_FLAG(int, router_pid, 0, "the router's process id: its resident memory is sampled");
ABSL_FLAG(int, slow, 0, "connections trickling their headers");
ABSL_FLAG(double, slow_s, 30, "how long the slow clients trickle");
ABSL_FLAG(double, timeout_s, 120, "give up on a stream after this long");
ABSL_FLAG(std::string, json, "", "also write the results here");

namespace {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

int64_t RssKb(int pid) {
  const int64_t bytes = semmoe::ProcStatusBytes("VmRSS", pid);
  return bytes < 0 ? -1 : bytes / 1024;
}

struct Address {
  sockaddr_in addr{};
  std::string host_port;
};

bool ParseAddress(const std::string& hp, Address* out) {
  const size_t colon = hp.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(hp.substr(colon + 1), &port)) return false;
  out->addr.sin_family = AF_INET;
  out->addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string host = hp.substr(0, colon);
  if (host == "localhost") host = "127.0.0.1";
  out->host_port = hp;
  return inet_pton(AF_INET, host.c_str(), &out->addr.sin_addr) == 1;
}

int Connect(const Address& a) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&a.addr), sizeof a.addr) != 0 &&
      errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string CompletionRequest(const Address& a, bool stream) {
  const std::string body = nlohmann::json{
      {"prompt", absl::GetFlag(FLAGS_prompt)},
      {"max_tokens", absl::GetFlag(FLAGS_max_tokens)},
      {"ignore_eos", true},
      {"temperature", 0},
      {"stream", stream}}.dump();
  return absl::StrCat("POST /v1/completions HTTP/1.1\r\nHost: ", a.host_port,
                      "\r\nContent-Type: application/json\r\nContent-Length: ", body.size(),
                      "\r\nConnection: close\r\n\r\n", body);
}

// One request on its own connection, driven by Step() when poll says so.
struct Exchange {
  int fd = -1;
  std::string out;
  size_t sent = 0;
  std::string in;
  absl::Time start;
  bool stream = true;  // A streamed answer ends with [DONE]; a whole one with the connection.
  double ttfb_ms = -1, e2e_ms = -1;
  bool done = false, failed = false;
  std::string error;

  short Events() const { return sent < out.size() ? POLLOUT : POLLIN; }

  void Fail(const std::string& why) {
    failed = done = true;
    error = why;
    close(fd);
    fd = -1;
  }

  void Step(absl::Time now) {
    if (sent < out.size()) {
      const ssize_t n = write(fd, out.data() + sent, out.size() - sent);
      if (n < 0 && errno != EAGAIN) return Fail(absl::StrCat("write: ", strerror(errno)));
      if (n > 0) sent += n;
      return;
    }
    char buf[16384];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      if (in.rfind("HTTP/1.1 200", 0) == 0 &&
          (!stream || in.find("data: [DONE]") != std::string::npos)) {
        e2e_ms = absl::ToDoubleMilliseconds(now - start);
        done = true;
        close(fd);
        fd = -1;
        return;
      }
      return Fail(in.empty() ? "closed with no answer" : in.substr(0, in.find("\r\n")));
    }
    in.append(buf, n);
    if (ttfb_ms < 0 && in.find("\"text\":\"") != std::string::npos &&
        in.find("data: ") != std::string::npos) {
      // The first event that carries text (not an empty one): the first token a user sees.
      size_t at = 0;
      while ((at = in.find("\"text\":\"", at)) != std::string::npos) {
        if (in.compare(at + 8, 1, "\"") != 0) {
          ttfb_ms = absl::ToDoubleMilliseconds(now - start);
          break;
        }
        at += 8;
      }
    }
    if (in.rfind("HTTP/1.1 ", 0) == 0 && in.size() >= 12 && in.compare(9, 3, "200") != 0 &&
        in.find("\r\n\r\n") != std::string::npos) {
      return Fail(in.substr(0, in.find("\r\n")));
    }
  }
};

// Drives `exchanges` until each is done or `deadline`; `tick` runs every 100 ms.
void Drive(std::vector<Exchange>& exchanges, absl::Time deadline,
           const std::function<void()>& tick = nullptr) {
  absl::Time next_tick = absl::Now();
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Exchange*> owners;
    for (Exchange& e : exchanges) {
      if (e.done) continue;
      fds.push_back({.fd = e.fd, .events = e.Events()});
      owners.push_back(&e);
    }
    if (fds.empty() || absl::Now() > deadline) break;
    poll(fds.data(), fds.size(), 20);
    const absl::Time now = absl::Now();
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) owners[i]->Step(now);
    }
    if (tick && now >= next_tick) {
      tick();
      next_tick = now + absl::Milliseconds(100);
    }
  }
  for (Exchange& e : exchanges) {
    if (!e.done) e.Fail("timed out");
  }
}

Exchange Start(const Address& a, std::string request, bool stream = true) {
  Exchange e;
  e.stream = stream;
  e.fd = Connect(a);
  e.out = std::move(request);
  e.start = absl::Now();
  if (e.fd < 0) e.Fail(absl::StrCat("connect: ", strerror(errno)));
  return e;
}

// One request, to its end (a blocking helper for /health and the ordinary completions).
Exchange Once(const Address& a, std::string request, absl::Duration timeout, bool stream) {
  std::vector<Exchange> one;
  one.push_back(Start(a, std::move(request), stream));
  Drive(one, absl::Now() + timeout);
  return one[0];
}

void Print(const char* what, const std::vector<double>& v, nlohmann::json& json) {
  std::printf("%-34s n=%-6zu p50 %8.1f ms   p99 %8.1f ms   max %8.1f ms\n", what, v.size(),
              Percentile(v, 0.5), Percentile(v, 0.99), Percentile(v, 1.0));
  json[what] = {{"n", v.size()},
                {"p50_ms", Percentile(v, 0.5)},
                {"p99_ms", Percentile(v, 0.99)},
                {"max_ms", Percentile(v, 1.0)}};
}

int Streams(const Address& a, int n, nlohmann::json& json) {
  const int pid = absl::GetFlag(FLAGS_router_pid);
  const int64_t rss_before = pid > 0 ? RssKb(pid) : -1;
  std::vector<Exchange> exchanges;
  exchanges.reserve(n);
  const std::string request = CompletionRequest(a, /*stream=*/true);
  for (int i = 0; i < n; ++i) exchanges.push_back(Start(a, request));
  int64_t rss_peak = -1;
  bool sampled = false;
  Drive(exchanges, absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_timeout_s)), [&] {
    if (pid <= 0) return;
    rss_peak = std::max(rss_peak, RssKb(pid));
    // The moment every live stream had its first token: all open at once.
    if (!sampled && std::all_of(exchanges.begin(), exchanges.end(),
                                [](const Exchange& e) { return e.done || e.ttfb_ms >= 0; })) {
      sampled = true;
      json["rss_all_open_kb"] = RssKb(pid);
    }
  });
  std::vector<double> ttfb, e2e;
  std::map<std::string, int> errors;
  for (const Exchange& e : exchanges) {
    if (e.failed) {
      ++errors[e.error];
      continue;
    }
    if (e.ttfb_ms >= 0) ttfb.push_back(e.ttfb_ms);
    e2e.push_back(e.e2e_ms);
  }
  std::sort(ttfb.begin(), ttfb.end());
  double gap = 0, gap_at = 0;
  for (size_t i = 1; i < ttfb.size(); ++i) {
    if (ttfb[i] - ttfb[i - 1] > gap) {
      gap = ttfb[i] - ttfb[i - 1];
      gap_at = ttfb[i - 1];
    }
  }
  std::printf("%d streaming completions at once (max_tokens %d)\n", n,
              absl::GetFlag(FLAGS_max_tokens));
  Print("time to first text (TTFB)", ttfb, json);
  Print("end to end", e2e, json);
  std::printf("largest gap between sorted TTFBs: %.1f ms (after %.1f ms)\n", gap, gap_at);
  json["ttfb_largest_gap_ms"] = gap;
  int failed = 0;
  for (const auto& [why, count] : errors) {
    std::printf("errors: %d × %s\n", count, why.c_str());
    failed += count;
  }
  std::printf("errors: %d of %d\n", failed, n);
  json["streams"] = n;
  json["errors"] = failed;
  if (pid > 0) {
    const int64_t at_open = json.value("rss_all_open_kb", rss_peak);
    std::printf(
        "router RSS: %lld KB before, %lld KB with every stream open (peak %lld KB): "
        "%.1f KB per stream\n",
        static_cast<long long>(rss_before), static_cast<long long>(at_open),
        static_cast<long long>(rss_peak),
        n > 0 ? static_cast<double>(at_open - rss_before) / n : 0.0);
    json["rss_before_kb"] = rss_before;
    json["rss_peak_kb"] = rss_peak;
    json["rss_per_stream_kb"] = n > 0 ? static_cast<double>(at_open - rss_before) / n : 0.0;
  }
  return failed == 0 ? 0 : 1;
}

// /health every 100 ms and a streamed completion every second, for `duration`; `each_second`
// runs once a second (the tricklers' next byte).
struct Probe {
  std::vector<double> health_ms, ttft_ms;
  int health_failed = 0;
};
Probe RunProbe(const Address& a, absl::Duration duration,
               const std::function<void()>& each_second) {
  const std::string health =
      absl::StrCat("GET /health HTTP/1.1\r\nHost: ", a.host_port, "\r\nConnection: close\r\n\r\n");
  const std::string completion = CompletionRequest(a, /*stream=*/true);
  Probe p;
  const absl::Time end = absl::Now() + duration;
  absl::Time next_second = absl::Now();
  while (absl::Now() < end) {
    if (absl::Now() >= next_second) {
      if (each_second) each_second();
      Exchange c = Once(a, completion, absl::Seconds(60), true);
      if (!c.failed && c.ttfb_ms >= 0) p.ttft_ms.push_back(c.ttfb_ms);
      next_second += absl::Seconds(1);
    }
    Exchange h = Once(a, health, absl::Seconds(10), false);
    if (h.failed || h.in.rfind("HTTP/1.1 200", 0) != 0) {
      ++p.health_failed;
    } else {
      p.health_ms.push_back(h.e2e_ms);
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return p;
}

int Slow(const Address& a, int n, nlohmann::json& json) {
  const absl::Duration trickle = absl::Seconds(absl::GetFlag(FLAGS_slow_s));
  // The same probe without anyone slow first: the baseline.
  const Probe before = RunProbe(a, absl::Seconds(10), nullptr);
  // The tricklers: one byte of their headers a second.
  const std::string header = absl::StrCat("POST /v1/completions HTTP/1.1\r\nHost: ", a.host_port,
                                          "\r\nX-Slow: ", std::string(200, 's'), "\r\n");
  std::vector<int> slow;
  for (int i = 0; i < n; ++i) {
    const int fd = Connect(a);
    if (fd >= 0) slow.push_back(fd);
  }
  size_t offset = 0;
  int dropped = 0;
  const Probe during = RunProbe(a, trickle, [&] {
    if (offset >= header.size()) return;
    for (int& fd : slow) {
      if (fd < 0) continue;
      if (send(fd, header.data() + offset, 1, MSG_NOSIGNAL) != 1 && errno != EAGAIN) {
        close(fd);
        fd = -1;
        ++dropped;
      }
    }
    ++offset;
  });
  int still_open = 0;
  for (int fd : slow) {
    if (fd < 0) continue;
    char b;
    const ssize_t r = recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
    if (r < 0 && errno == EAGAIN) ++still_open;
    close(fd);
  }
  std::printf(
      "%zu connections trickling headers (1 byte/s) for %.0f s; the same probe for 10 s "
      "before them\n",
      slow.size(), absl::ToDoubleSeconds(trickle));
  Print("/health before", before.health_ms, json);
  Print("/health during", during.health_ms, json);
  std::printf("/health failures: %d before, %d during\n", before.health_failed,
              during.health_failed);
  Print("completion TTFT before", before.ttft_ms, json);
  Print("completion TTFT during", during.ttft_ms, json);
  std::printf("tricklers still open at the end: %d (closed by the server: %zu)\n", still_open,
              slow.size() - still_open);
  json["slow"] = slow.size();
  json["health_failures"] = during.health_failed;
  json["slow_still_open"] = still_open;
  return during.health_failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);  // A connection the server closed is an error to count, not our end.
  Address a;
  if (!ParseAddress(absl::GetFlag(FLAGS_http), &a)) {
    std::cerr << "bench_http_door: --http HOST:PORT (IPv4) is required\n";
    return 2;
  }
  const int streams = absl::GetFlag(FLAGS_streams), slow = absl::GetFlag(FLAGS_slow);
  if ((streams > 0) == (slow > 0)) {
    std::cerr << "bench_http_door: give --streams N or --slow N\n";
    return 2;
  }
  // Room for the connections: one descriptor each.
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  r.rlim_cur = r.rlim_max;
  setrlimit(RLIMIT_NOFILE, &r);
  nlohmann::json json;
  const int rc = streams > 0 ? Streams(a, streams, json) : Slow(a, slow, json);
  if (!absl::GetFlag(FLAGS_json).empty()) std::ofstream(absl::GetFlag(FLAGS_json)) << json.dump(2);
  return rc;
}
