// bench_http: what the OpenAI-compatible HTTP frontend adds to a request's latency, against the
// router's gRPC service, side by side on one running cluster. Each of `concurrency` closed-loop
// workers sends every prompt twice, once per protocol (gRPC Generate, streamed
// /v1/completions), in alternating order, with the same generation (greedy, max_tokens, EOS
// ignored): both protocols see the same prompts under the same load. Prints TTFT and E2E p50/p99
// per protocol, the difference of those percentiles, and the p50/p99 of the per-prompt
// difference (HTTP − gRPC on the same prompt).
//
//   bench_http --grpc HOST:PORT --http HOST:PORT --prompts FILE.jsonl
//              [--concurrency 4] [--duration_s 60] [--max_tokens 32] [--json FILE]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/security.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "router/proto/router.grpc.pb.h"
#include "tools/loadgen/workload.h"
// Last: httplib brings <resolv.h>.
#include <httplib.h>  // NOLINT(build/include_order)

ABSL_FLAG(std::string, grpc, "", "the router's gRPC address");
ABSL_FLAG(std::string, http, "", "the router's HTTP address (host:port)");
ABSL_FLAG(std::string, prompts, "", "JSONL prompts (\"text\")");
ABSL_FLAG(int, max_prompt_chars, 400, "cut longer prompts");
ABSL_FLAG(int, concurrency, 4, "requests in flight (closed loop)");
ABSL_FLAG(double, duration_s, 60, "seconds of load");
ABSL_FLAG(int, max_tokens, 32, "tokens per request");
ABSL_FLAG(std::string, json, "", "also write the results here");

namespace semmoe::tools {
namespace {

struct Sample {
  double ttft_ms = 0, e2e_ms = 0;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

// One request over gRPC; false (and *error) when it failed.
bool Grpc(router::rpc::RouterService::Stub& stub, const std::string& text, Sample* s,
          std::string* error) {
  router::rpc::GenerateRequest r;
  r.set_text(text);
  r.set_max_tokens(absl::GetFlag(FLAGS_max_tokens));
  r.set_ignore_eos(true);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
  const absl::Time start = absl::Now();
  auto reader = stub.Generate(&context, r);
  router::rpc::GenerateResponse m;
  bool first = true;
  while (reader->Read(&m)) {
    if (first && m.token_ids_size() > 0) {
      s->ttft_ms = absl::ToDoubleMilliseconds(absl::Now() - start);
      first = false;
    }
  }
  const grpc::Status status = reader->Finish();
  s->e2e_ms = absl::ToDoubleMilliseconds(absl::Now() - start);
  if (!status.ok()) *error = status.error_message();
  return status.ok();
}

// The same request as a streamed /v1/completions.
bool Http(httplib::Client& client, const std::string& text, Sample* s, std::string* error) {
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = nlohmann::json({{"prompt", text},
                             {"max_tokens", absl::GetFlag(FLAGS_max_tokens)},
                             {"temperature", 0},
                             {"ignore_eos", true},
                             {"stream", true}})
                 .dump();
  const absl::Time start = absl::Now();
  bool first = true;
  std::string body;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    body.append(data, n);
    if (first && body.find("\"text\":\"") != std::string::npos) {
      s->ttft_ms = absl::ToDoubleMilliseconds(absl::Now() - start);
      first = false;
    }
    return true;
  };
  auto res = client.send(req);
  s->e2e_ms = absl::ToDoubleMilliseconds(absl::Now() - start);
  if (!res || res->status != 200 || body.find("data: [DONE]") == std::string::npos) {
    *error = res ? absl::StrCat("HTTP ", res->status, ": ", body.substr(0, 200))
                 : httplib::to_string(res.error());
    return false;
  }
  return true;
}

// Pairs of samples of the same prompt: [0] gRPC, [1] HTTP.
struct Pairs {
  absl::Mutex mu;
  std::vector<Sample> by[2];
  int64_t failed[2] = {0, 0};
  std::string first_error[2];
};

void Run(const std::vector<Prompt>& prompts, Pairs& out) {
  const absl::Time end = absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < absl::GetFlag(FLAGS_concurrency); ++w) {
    workers.emplace_back([&] {
      auto stub =
          router::rpc::RouterService::NewStub(semmoe::NewChannel(absl::GetFlag(FLAGS_grpc)));
      std::vector<std::string> hp = absl::StrSplit(absl::GetFlag(FLAGS_http), ':');
      httplib::Client client(hp[0], std::stoi(hp[1]));
      client.set_read_timeout(120, 0);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      while (absl::Now() < end) {
        const size_t i = next++;
        const Prompt& p = prompts[i % prompts.size()];
        Sample s[2];
        std::string error[2];
        bool ok[2];
        for (int k = 0; k < 2; ++k) {
          const int h = (k + i) % 2;  // Alternate which protocol goes first.
          ok[h] =
              h ? Http(client, p.text, &s[h], &error[h]) : Grpc(*stub, p.text, &s[h], &error[h]);
        }
        absl::MutexLock lock(&out.mu);
        for (int h = 0; h < 2; ++h) {
          if (!ok[h] && out.failed[h]++ == 0) out.first_error[h] = error[h];
        }
        if (ok[0] && ok[1]) {
          out.by[0].push_back(s[0]);
          out.by[1].push_back(s[1]);
        }
      }
    });
  }
  for (auto& t : workers) t.join();
}

int Main() {
  if (absl::GetFlag(FLAGS_grpc).empty() || absl::GetFlag(FLAGS_http).empty() ||
      absl::GetFlag(FLAGS_prompts).empty() ||
      absl::GetFlag(FLAGS_http).find(':') == std::string::npos) {
    std::cerr << "bench_http: --grpc HOST:PORT, --http HOST:PORT and --prompts are required\n";
    return 2;
  }
  absl::StatusOr<std::vector<Prompt>> prompts =
      LoadPrompts(UserPath(absl::GetFlag(FLAGS_prompts)),
                  {.max_prompt_chars = absl::GetFlag(FLAGS_max_prompt_chars)});
  if (!prompts.ok()) {
    std::cerr << "bench_http: " << prompts.status().message() << "\n";
    return 1;
  }
  Pairs pairs;
  Run(*prompts, pairs);
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  std::printf("%-6s %9s %7s %12s %12s %12s %12s\n", "", "requests", "failed", "TTFT p50 ms",
              "TTFT p99 ms", "E2E p50 ms", "E2E p99 ms");
  double stat[2][4];
  for (int h = 0; h < 2; ++h) {
    std::vector<double> ttft, e2e;
    for (const Sample& s : pairs.by[h]) {
      ttft.push_back(s.ttft_ms);
      e2e.push_back(s.e2e_ms);
    }
    stat[h][0] = Percentile(ttft, 0.5);
    stat[h][1] = Percentile(ttft, 0.99);
    stat[h][2] = Percentile(e2e, 0.5);
    stat[h][3] = Percentile(e2e, 0.99);
    const char* name = h ? "HTTP" : "gRPC";
    std::printf("%-6s %9zu %7lld %12.2f %12.2f %12.2f %12.2f\n", name, pairs.by[h].size(),
                static_cast<long long>(pairs.failed[h]), stat[h][0], stat[h][1], stat[h][2],
                stat[h][3]);
    if (pairs.failed[h] > 0) {
      std::printf("  %s's first error: %s\n", name, pairs.first_error[h].c_str());
    }
    j[name] = {{"requests", pairs.by[h].size()}, {"failed", pairs.failed[h]},
               {"ttft_p50_ms", stat[h][0]},      {"ttft_p99_ms", stat[h][1]},
               {"e2e_p50_ms", stat[h][2]},       {"e2e_p99_ms", stat[h][3]}};
  }
  std::vector<double> dttft, de2e;  // Per prompt: HTTP − gRPC.
  for (size_t i = 0; i < pairs.by[0].size(); ++i) {
    dttft.push_back(pairs.by[1][i].ttft_ms - pairs.by[0][i].ttft_ms);
    de2e.push_back(pairs.by[1][i].e2e_ms - pairs.by[0][i].e2e_ms);
  }
  std::printf(
      "HTTP − gRPC, percentiles: TTFT p50 %+.2f ms, p99 %+.2f ms; E2E p50 %+.2f ms, "
      "p99 %+.2f ms\n",
      stat[1][0] - stat[0][0], stat[1][1] - stat[0][1], stat[1][2] - stat[0][2],
      stat[1][3] - stat[0][3]);
  std::printf(
      "HTTP − gRPC, same prompt: TTFT p50 %+.2f ms, p99 %+.2f ms; E2E p50 %+.2f ms, "
      "p99 %+.2f ms\n",
      Percentile(dttft, 0.5), Percentile(dttft, 0.99), Percentile(de2e, 0.5),
      Percentile(de2e, 0.99));
  j["added_ms"] = {{"ttft_p50", stat[1][0] - stat[0][0]},
                   {"ttft_p99", stat[1][1] - stat[0][1]},
                   {"e2e_p50", stat[1][2] - stat[0][2]},
                   {"e2e_p99", stat[1][3] - stat[0][3]}};
  j["paired_added_ms"] = {{"ttft_p50", Percentile(dttft, 0.5)},
                          {"ttft_p99", Percentile(dttft, 0.99)},
                          {"e2e_p50", Percentile(de2e, 0.5)},
                          {"e2e_p99", Percentile(de2e, 0.99)}};
  if (!absl::GetFlag(FLAGS_json).empty()) {
    (void)WriteFile(UserPath(absl::GetFlag(FLAGS_json)), j.dump(2) + "\n");
  }
  return pairs.failed[0] + pairs.failed[1] > 0 ? 1 : 0;
}

}  // namespace
}  // namespace semmoe::tools

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return semmoe::tools::Main();
}
