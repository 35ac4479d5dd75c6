// Drives a RouterService with a workload and measures it from the client's side.
//
// Open loop (`rate` > 0): Poisson arrivals at `rate` requests/s for `duration`, whatever the
// server does — the way to find where latency breaks. Closed loop (`concurrency` > 0): that many
// requests in flight, each replaced as it ends — after a failure or a rejection, only after a
// backoff (doubling from `backoff_initial` to `backoff_max` while they go on, reset by a
// success), as a well-behaved client does. Then requests still in flight get `drain` to end
// (after which they are cancelled and count as failed).
//
// Per request: TTFT (sent → first token), TPOT (mean gap between tokens after the first), E2E.
// Goodput: requests per second that finished within the SLO (TTFT and TPOT); attainment: their
// share of all requests sent. LAR and all-to-all bytes per token come from the engines' counters
// (the router's GetStats) before and after the run.
#ifndef SEMMOE_TOOLS_LOADGEN_LOAD_RUNNER_H_
#define SEMMOE_TOOLS_LOADGEN_LOAD_RUNNER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "router/proto/router.grpc.pb.h"
#include "router/core/latency_window.h"
#include "tools/loadgen/workload.h"

namespace semmoe::tools {

struct LoadOptions {
  double rate = 0;      // Open loop: arrivals per second.
  int concurrency = 0;  // Closed loop: requests in flight. Exactly one of the two is > 0.
  absl::Duration duration = absl::Seconds(10);
  absl::Duration drain = absl::Seconds(60);
  int max_tokens = 64;
  bool ignore_eos = true;  // Every request generates max_tokens: comparable runs.
  double slo_ttft_ms = 1000;
  double slo_tpot_ms = 200;
  uint64_t seed = 0;
  absl::Duration backoff_initial = absl::Milliseconds(50);  // Closed loop; 0: no backoff.
  absl::Duration backoff_max = absl::Seconds(2);
  // A progress line on stderr while the run goes (requests ended of those expected, rate,
  // ETA); callers enable it on a terminal only (common/progress.h ProgressEnabled).
  bool progress = false;
  bool record_requests = false;  // Fill LoadResult::requests.
};

// How one request ended, as the client saw it (LoadOptions::record_requests).
struct RequestRecord {
  std::string id;
  std::string outcome;  // "completed", "rejected" (RESOURCE_EXHAUSTED) or "failed".
  std::string code;     // The status code's name ("OK", "UNAVAILABLE", ...).
  std::string message;  // The status message (why it did not complete).
  double sent_s = 0, end_s = 0;  // Since the run's first send.
  int64_t tokens = 0;            // Tokens received.
};

struct LoadResult {
  LoadOptions options;
  double seconds = 0;  // First send → last end.
  int64_t sent = 0, completed = 0, failed = 0, rejected = 0, within_slo = 0;
  int64_t output_tokens = 0;
  double throughput_rps = 0, output_tokens_per_s = 0, goodput_rps = 0, slo_attainment = 0;
  router::PercentileSummary ttft_ms, tpot_ms, e2e_ms;
  double mean_rank_lar = 0;  // Of the serving ranks, as the router reported them.
  // During the run, from the engines' counters (via the router's stats, before and after);
  // −1 if the router could not say.
  double lar = -1;
  double a2a_bytes_per_token = -1;
  std::map<int, int64_t> per_rank;  // Completed requests per DP rank.
  std::vector<std::string> errors;  // The first few, for the report.
  // Every request that did not complete, by its status code's name (RESOURCE_EXHAUSTED counts
  // the rejections; the rest are failures).
  std::map<std::string, int64_t> errors_by_code;
  double backoff_s = 0;  // Closed loop: time the workers held back after failures.
  std::vector<RequestRecord> requests;  // With record_requests, in the order they ended.

  nlohmann::json ToJson() const;
};

// InvalidArgument for options that do not name one mode, or an empty workload.
absl::StatusOr<LoadResult> RunLoad(router::rpc::RouterService::Stub& stub,
                                   const std::vector<Prompt>& prompts, const LoadOptions& options);

// Open-loop runs at each rate (ascending); `best_rate` is the highest whose SLO attainment is
// at least `target_attainment` (0 if none).
struct SweepResult {
  std::vector<LoadResult> points;
  double best_rate = 0;
};
absl::StatusOr<SweepResult> Sweep(router::rpc::RouterService::Stub& stub,
                                  const std::vector<Prompt>& prompts, LoadOptions options,
                                  const std::vector<double>& rates, double target_attainment);

// The highest rate in SLO, searched: open-loop runs from `start_rate`, doubling while the SLO
// holds (up to `max_rate`), then `bisect_steps` halvings of the interval between the last rate
// that held and the first that did not. Every run is in `points` (in the order run); each run
// is called back as it ends (for progress), if `on_point` is set.
absl::StatusOr<SweepResult> SearchMaxRate(
    router::rpc::RouterService::Stub& stub, const std::vector<Prompt>& prompts, LoadOptions options,
    double start_rate, double max_rate, int bisect_steps, double target_attainment,
    const std::function<void(const LoadResult&)>& on_point = nullptr);

}  // namespace semmoe::tools

#endif  // SEMMOE_TOOLS_LOADGEN_LOAD_RUNNER_H_
