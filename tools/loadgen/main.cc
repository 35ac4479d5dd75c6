// loadgen: load for a Sem-MoE router, measured from the client side.
//
//   loadgen --target HOST:PORT --prompts FILE.jsonl (--rate R | --concurrency C)
//           [--duration_s 10] [--max_tokens 64] [--slo_ttft_ms 1000] [--slo_tpot_ms 200]
//           [--out result.json]
//   loadgen ... --sweep --rates 1,2,4,8 [--target_attainment 0.9]   (the highest rate in SLO)
//   loadgen ... --sweep [--rate R0] [--max_rate 256] [--bisect_steps 3]  (searched: doubling
//               from R0 while in SLO, then bisection)
//
// Prints a table (and writes JSON with --out): throughput, TTFT/TPOT/E2E percentiles, goodput
// and SLO attainment, requests per rank and the ranks' LAR, and every request that did not
// complete by status code. Closed loop backs off after failures (--backoff_ms, doubling to
// --backoff_max_ms). Exit status: 0 when every request completed or was rejected (the server
// refusing load it cannot take), 1 when a request failed or it could not run, 2 for bad usage.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/progress.h"
#include "common/security.h"
#include "common/security_flags.h"
#include "grpcpp/grpcpp.h"
#include "tools/loadgen/load_runner.h"
#include "tools/loadgen/workload.h"

ABSL_FLAG(std::string, target, "127.0.0.1:8000", "router address");
ABSL_FLAG(std::string, prompts, "", "JSONL prompts (\"text\" and/or \"token_ids\" per line)");
ABSL_FLAG(bool, token_ids, false, "send the lines' token ids instead of their text");
ABSL_FLAG(int, max_prompts, 0, "use the first N prompts (0: all)");
ABSL_FLAG(int, max_prompt_chars, 2000, "cut longer texts (0: no limit)");
ABSL_FLAG(double, rate, 0, "open loop: Poisson arrivals per second");
ABSL_FLAG(int, concurrency, 0, "closed loop: requests in flight");
ABSL_FLAG(double, duration_s, 10, "seconds of arrivals (per point in a sweep)");
ABSL_FLAG(double, drain_s, 60, "seconds to let requests in flight finish before cancelling");
ABSL_FLAG(int, max_tokens, 64, "tokens generated per request (EOS ignored)");
ABSL_FLAG(double, slo_ttft_ms, 1000, "SLO: time to first token");
ABSL_FLAG(double, slo_tpot_ms, 200, "SLO: time per output token");
ABSL_FLAG(bool, sweep, false, "open-loop runs at each of --rates");
ABSL_FLAG(std::vector<std::string>, rates, {}, "sweep rates (requests/s)");
ABSL_FLAG(double, target_attainment, 0.9, "sweep: share of requests that must meet the SLO");
ABSL_FLAG(double, max_rate, 256, "sweep without --rates: the search's highest rate");
ABSL_FLAG(int, bisect_steps, 3, "sweep without --rates: halvings after the doubling");
ABSL_FLAG(uint64_t, seed, 0, "arrival process seed");
ABSL_FLAG(std::string, out, "", "write the result(s) here as JSON");
ABSL_FLAG(std::string, requests_out, "",
          "write how each request ended here, one JSON line per request (id, outcome, code, "
          "message, sent_s, end_s, tokens); not with --sweep");
ABSL_FLAG(double, backoff_ms, 50,
          "closed loop: hold the next request back this long after a failure or rejection, "
          "doubling while they go on (0: no backoff)");
ABSL_FLAG(double, backoff_max_ms, 2000, "closed loop: the longest backoff");
ABSL_FLAG(bool, quiet, false, "no progress line on stderr (it is shown only on a terminal anyway)");

namespace semmoe::tools {
namespace {

int Usage(const std::string& message) {
  std::cerr << "loadgen: " << message << "\n(see --helpfull)\n";
  return 2;
}

void PrintHeader() {
  std::printf("%8s %6s %7s %6s %6s %8s %9s %9s %9s %9s %9s %8s %7s %6s %9s\n", "rate", "conc",
              "done", "fail", "rej", "req/s", "tok/s", "TTFT p50", "TTFT p99", "TPOT p50",
              "E2E p99", "goodput", "in SLO", "LAR", "a2a B/tok");
}

void PrintRow(const LoadResult& r) {
  std::printf(
      "%8.2f %6d %7lld %6lld %6lld %8.2f %9.1f %9.1f %9.1f %9.2f %9.1f %8.2f %6.1f%% %6.3f %9.0f\n",
      r.options.rate, r.options.concurrency, static_cast<long long>(r.completed),
      static_cast<long long>(r.failed), static_cast<long long>(r.rejected), r.throughput_rps,
      r.output_tokens_per_s, r.ttft_ms.p50, r.ttft_ms.p99, r.tpot_ms.p50, r.e2e_ms.p99,
      r.goodput_rps, 100 * r.slo_attainment, r.lar, r.a2a_bytes_per_token);
  for (const std::string& e : r.errors) std::printf("    error: %s\n", e.c_str());
  if (!r.errors_by_code.empty()) {
    std::printf("    not completed:");
    for (const auto& [code, n] : r.errors_by_code) {
      std::printf(" %s %lld", code.c_str(), static_cast<long long>(n));
    }
    if (r.backoff_s > 0) std::printf("; held back %.1f s after failures", r.backoff_s);
    std::printf("\n");
  }
}

// Exit status 1 when any request failed (rejections are not failures: the server refused load
// it could not take, as it should).
int FailedExit(int64_t failed) {
  if (failed == 0) return 0;
  std::cerr << "loadgen: " << failed << " request(s) failed\n";
  return 1;
}

int Main() {
  if (absl::GetFlag(FLAGS_prompts).empty()) return Usage("--prompts is required");
  absl::StatusOr<std::vector<Prompt>> prompts =
      LoadPrompts(UserPath(absl::GetFlag(FLAGS_prompts)),
                  {.prefer_token_ids = absl::GetFlag(FLAGS_token_ids),
                   .max_prompts = absl::GetFlag(FLAGS_max_prompts),
                   .max_prompt_chars = absl::GetFlag(FLAGS_max_prompt_chars)});
  if (!prompts.ok()) {
    std::cerr << "loadgen: " << prompts.status().message() << "\n";
    return 1;
  }
  if (!(absl::GetFlag(FLAGS_duration_s) > 0) || absl::GetFlag(FLAGS_drain_s) < 0) {
    return Usage("--duration_s must be > 0 and --drain_s ≥ 0");
  }
  LoadOptions o{.rate = absl::GetFlag(FLAGS_rate),
                .concurrency = absl::GetFlag(FLAGS_concurrency),
                .duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s)),
                .drain = absl::Seconds(absl::GetFlag(FLAGS_drain_s)),
                .max_tokens = absl::GetFlag(FLAGS_max_tokens),
                .slo_ttft_ms = absl::GetFlag(FLAGS_slo_ttft_ms),
                .slo_tpot_ms = absl::GetFlag(FLAGS_slo_tpot_ms),
                .seed = absl::GetFlag(FLAGS_seed),
                .backoff_initial = absl::Milliseconds(absl::GetFlag(FLAGS_backoff_ms)),
                .backoff_max = absl::Milliseconds(absl::GetFlag(FLAGS_backoff_max_ms)),
                .progress = ProgressEnabled(absl::GetFlag(FLAGS_quiet))};
  auto stub = router::rpc::RouterService::NewStub(semmoe::NewChannel(absl::GetFlag(FLAGS_target)));
  std::cout << "loadgen: " << prompts->size() << " prompts → " << absl::GetFlag(FLAGS_target)
            << ", " << o.max_tokens << " tokens each, SLO TTFT ≤ " << o.slo_ttft_ms
            << " ms and TPOT ≤ " << o.slo_tpot_ms << " ms" << std::endl;
  nlohmann::json report;
  int64_t failed = 0;
  if (absl::GetFlag(FLAGS_sweep)) {
    std::vector<double> rates;
    for (const std::string& r : absl::GetFlag(FLAGS_rates)) {
      double v = 0;
      if (!absl::SimpleAtod(r, &v) || !(v > 0)) return Usage(absl::StrCat("bad rate '", r, "'"));
      rates.push_back(v);
    }
    PrintHeader();
    SweepResult sweep;
    if (rates.empty()) {  // Search: double from --rate, then bisect.
      absl::StatusOr<SweepResult> found = SearchMaxRate(
          *stub, *prompts, o, o.rate > 0 ? o.rate : 1.0, absl::GetFlag(FLAGS_max_rate),
          absl::GetFlag(FLAGS_bisect_steps), absl::GetFlag(FLAGS_target_attainment),
          [](const LoadResult& r) { PrintRow(r); });
      if (!found.ok()) return Usage(std::string(found.status().message()));
      sweep = *std::move(found);
    }
    std::sort(rates.begin(), rates.end());
    for (double rate : rates) {  // One point at a time, printed as it ends.
      absl::StatusOr<SweepResult> one =
          Sweep(*stub, *prompts, o, {rate}, absl::GetFlag(FLAGS_target_attainment));
      if (!one.ok()) return Usage(std::string(one.status().message()));
      PrintRow(one->points[0]);
      if (one->best_rate > 0) sweep.best_rate = rate;
      sweep.points.push_back(one->points[0]);
    }
    std::printf("highest rate with %.0f%% of requests in SLO: %.2f req/s\n",
                100 * absl::GetFlag(FLAGS_target_attainment), sweep.best_rate);
    report = {{"best_rate", sweep.best_rate},
              {"target_attainment", absl::GetFlag(FLAGS_target_attainment)},
              {"points", nlohmann::json::array()}};
    for (const LoadResult& p : sweep.points) {
      report["points"].push_back(p.ToJson());
      failed += p.failed;
    }
  } else {
    o.record_requests = !absl::GetFlag(FLAGS_requests_out).empty();
    absl::StatusOr<LoadResult> r = RunLoad(*stub, *prompts, o);
    if (!r.ok()) return Usage(std::string(r.status().message()));
    if (o.record_requests) {
      std::string lines;
      for (const RequestRecord& q : r->requests) {
        lines += nlohmann::json({{"id", q.id},
                                 {"outcome", q.outcome},
                                 {"code", q.code},
                                 {"message", q.message},
                                 {"sent_s", q.sent_s},
                                 {"end_s", q.end_s},
                                 {"tokens", q.tokens}})
                     .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                 "\n";
      }
      absl::Status written = WriteFile(UserPath(absl::GetFlag(FLAGS_requests_out)), lines);
      if (!written.ok()) {
        std::cerr << "loadgen: " << written.message() << "\n";
        return 1;
      }
    }
    PrintHeader();
    PrintRow(*r);
    std::printf("requests per rank:");
    for (const auto& [rank, n] : r->per_rank)
      std::printf(" %d:%lld", rank, static_cast<long long>(n));
    std::printf("; mean LAR of the serving ranks %.3f\n", r->mean_rank_lar);
    report = r->ToJson();
    failed = r->failed;
  }
  if (!absl::GetFlag(FLAGS_out).empty()) {
    absl::Status written = WriteFile(UserPath(absl::GetFlag(FLAGS_out)), report.dump(2) + "\n");
    if (!written.ok()) {
      std::cerr << "loadgen: " << written.message() << "\n";
      return 1;
    }
  }
  return FailedExit(failed);
}

}  // namespace
}  // namespace semmoe::tools

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::Status security = semmoe::InstallSecurityFromFlags(); !security.ok()) {
    std::cerr << "loadgen: " << security.message() << "\n";
    return 2;
  }
  return semmoe::tools::Main();
}
