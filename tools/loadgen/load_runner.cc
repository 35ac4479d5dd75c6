#include "tools/loadgen/load_runner.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/progress.h"
#include "grpcpp/grpcpp.h"

namespace semmoe::tools {
namespace {

using router::rpc::GenerateRequest;
using router::rpc::GenerateResponse;

class Runner;

// One request: a callback client stream that reports to the runner (which owns it).
class Call : public grpc::ClientReadReactor<GenerateResponse> {
 public:
  Call(Runner* runner, GenerateRequest request) : runner_(runner), request_(std::move(request)) {}
  void Start(router::rpc::RouterService::Stub& stub, absl::Duration timeout) {
    context_.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    sent_ = absl::Now();
    stub.async()->Generate(&context_, &request_, this);
    StartRead(&message_);
    StartCall();
  }
  void Cancel() { context_.TryCancel(); }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    if (message_.token_ids_size() > 0) {
      const absl::Time now = absl::Now();
      if (!first_.has_value()) first_ = now;
      last_ = now;
      tokens_ += message_.token_ids_size();
    }
    if (message_.has_final()) final_ = message_.final();
    StartRead(&message_);
  }
  void OnDone(const grpc::Status& status) override;

 private:
  friend class Runner;
  Runner* runner_;
  GenerateRequest request_;
  GenerateResponse message_;
  grpc::ClientContext context_;
  absl::Time sent_, last_;
  std::optional<absl::Time> first_;
  int64_t tokens_ = 0;
  std::optional<router::rpc::FinalRecord> final_;
};

class Runner {
 public:
  Runner(router::rpc::RouterService::Stub& stub, const std::vector<Prompt>& prompts,
         const LoadOptions& o)
      : stub_(stub), prompts_(prompts), o_(o), rng_(o.seed), progress_(ProgressFor(o)) {}

  // Open loop: of the requests the rate implies over the duration; closed loop: no total.
  static ProgressOptions ProgressFor(const LoadOptions& o) {
    ProgressOptions p;
    p.label = o.rate > 0 ? absl::StrFormat("loadgen %g req/s", o.rate)
                         : absl::StrFormat("loadgen %d in flight", o.concurrency);
    p.unit = "requests";
    p.total = o.rate > 0 ? std::llround(o.rate * absl::ToDoubleSeconds(o.duration)) : 0;
    p.enabled = o.progress;
    return p;
  }

  LoadResult Run() {
    const absl::Time start = absl::Now();
    const absl::Time end = start + o_.duration;
    if (o_.rate > 0) {
      std::exponential_distribution<double> gap(o_.rate);
      absl::Time next = start;
      while (true) {
        next += absl::Seconds(gap(rng_));
        if (next >= end) break;
        absl::SleepFor(next - absl::Now());
        Issue();
      }
    } else {
      while (absl::Now() < end) {
        absl::Duration backoff;
        {
          absl::MutexLock lock(&mu_);
          auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
            return static_cast<int>(live_.size()) < o_.concurrency;
          };
          mu_.AwaitWithDeadline(absl::Condition(&room), end);
          if (!room()) break;
          backoff = Backoff();
          result_.backoff_s += absl::ToDoubleSeconds(std::min(backoff, end - absl::Now()));
        }
        if (backoff > absl::ZeroDuration()) {
          absl::SleepFor(std::min(backoff, end - absl::Now()));
          if (absl::Now() >= end) break;
        }
        Issue();
      }
    }
    // Drain, then cancel what is left.
    std::vector<Call*> stragglers;
    {
      absl::MutexLock lock(&mu_);
      auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return live_.empty(); };
      if (!mu_.AwaitWithTimeout(absl::Condition(&idle), o_.drain)) {
        stragglers.assign(live_.begin(), live_.end());
      }
    }
    for (Call* c : stragglers) c->Cancel();  // Owned by all_: alive until Run returns.
    absl::MutexLock lock(&mu_);
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return live_.empty(); };
    mu_.Await(absl::Condition(&idle));
    progress_.Finish();
    result_.options = o_;
    result_.seconds = absl::ToDoubleSeconds(std::max(last_end_, end) - start);
    if (result_.seconds > 0) {
      result_.throughput_rps = result_.completed / result_.seconds;
      result_.output_tokens_per_s = result_.output_tokens / result_.seconds;
      result_.goodput_rps = result_.within_slo / result_.seconds;
    }
    result_.slo_attainment =
        result_.sent == 0 ? 0 : static_cast<double>(result_.within_slo) / result_.sent;
    result_.ttft_ms = ttft_.Summary();
    result_.tpot_ms = tpot_.Summary();
    result_.e2e_ms = e2e_.Summary();
    result_.mean_rank_lar = result_.completed == 0 ? 0 : lar_sum_ / result_.completed;
    return result_;
  }

  void Done(Call* call, const grpc::Status& status) {
    const absl::Time now = absl::Now();
    absl::MutexLock lock(&mu_);
    live_.erase(call);
    last_end_ = std::max(last_end_, now);
    progress_.Add(1);
    if (o_.record_requests) {
      const absl::StatusCode code = static_cast<absl::StatusCode>(status.error_code());
      result_.requests.push_back(
          {.id = call->request_.request_id(),
           .outcome = status.ok() ? "completed"
                      : code == absl::StatusCode::kResourceExhausted ? "rejected"
                                                                     : "failed",
           .code = absl::StatusCodeToString(code),
           .message = status.error_message(),
           .sent_s = absl::ToDoubleSeconds(call->sent_ - first_send_),
           .end_s = absl::ToDoubleSeconds(now - first_send_),
           .tokens = call->tokens_});
    }
    if (!status.ok()) {
      // "UNAVAILABLE", "RESOURCE_EXHAUSTED", ...: gRPC's codes are absl's.
      ++result_.errors_by_code[absl::StatusCodeToString(
          static_cast<absl::StatusCode>(status.error_code()))];
      ++consecutive_failures_;
      if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        ++result_.rejected;
      } else {
        ++result_.failed;
      }
      if (result_.errors.size() < 5) {
        result_.errors.push_back(absl::StrCat(status.error_code(), ": ", status.error_message()));
      }
      return;
    }
    consecutive_failures_ = 0;
    ++result_.completed;
    result_.output_tokens += call->tokens_;
    const absl::Time first = call->first_.value_or(now);
    const double ttft = absl::ToDoubleMilliseconds(first - call->sent_);
    const double tpot = call->tokens_ > 1
                            ? absl::ToDoubleMilliseconds(call->last_ - first) / (call->tokens_ - 1)
                            : 0.0;
    ttft_.Add(ttft);
    if (call->tokens_ > 1) tpot_.Add(tpot);
    e2e_.Add(absl::ToDoubleMilliseconds(now - call->sent_));
    if (ttft <= o_.slo_ttft_ms && tpot <= o_.slo_tpot_ms) ++result_.within_slo;
    if (call->final_.has_value()) {
      ++result_.per_rank[call->final_->rank()];
      lar_sum_ += call->final_->rank_lar();
    }
  }

 private:
  // How long to hold the next request back after `consecutive_failures_` failures in a row.
  absl::Duration Backoff() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (consecutive_failures_ == 0 || o_.backoff_initial <= absl::ZeroDuration()) {
      return absl::ZeroDuration();
    }
    absl::Duration d = o_.backoff_initial;
    for (int i = 1; i < consecutive_failures_ && d < o_.backoff_max; ++i) d *= 2;
    return std::min(d, o_.backoff_max);
  }

  void Issue() {
    GenerateRequest request;
    const Prompt& p = prompts_[next_prompt_++ % prompts_.size()];
    if (!p.text.empty()) {
      request.set_text(p.text);
    } else {
      for (int32_t id : p.token_ids) request.add_token_ids(id);
    }
    request.set_max_tokens(o_.max_tokens);
    request.set_ignore_eos(o_.ignore_eos);
    request.set_request_id(absl::StrCat("load-", o_.seed, "-", next_prompt_));
    auto* call = new Call(this, std::move(request));
    {
      absl::MutexLock lock(&mu_);
      if (result_.sent == 0) first_send_ = absl::Now();
      all_.emplace_back(call);
      live_.insert(call);
      ++result_.sent;
    }
    call->Start(stub_, o_.duration + o_.drain);
  }

  router::rpc::RouterService::Stub& stub_;
  const std::vector<Prompt>& prompts_;
  const LoadOptions o_;
  std::mt19937_64 rng_;
  Progress progress_;  // Thread-safe.
  size_t next_prompt_ = 0;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Call>> all_ ABSL_GUARDED_BY(mu_);
  std::set<Call*> live_ ABSL_GUARDED_BY(mu_);
  LoadResult result_ ABSL_GUARDED_BY(mu_);
  absl::Time last_end_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time first_send_ ABSL_GUARDED_BY(mu_) = absl::Now();
  double lar_sum_ ABSL_GUARDED_BY(mu_) = 0;
  int consecutive_failures_ ABSL_GUARDED_BY(mu_) = 0;
  router::LatencyWindow ttft_, tpot_, e2e_;
};

void Call::OnDone(const grpc::Status& status) { runner_->Done(this, status); }

// The router's stats once it has polled the engines twice more (so they include everything
// that ended before the call); nullopt if it does not answer in time.
std::optional<router::rpc::RouterStats> FreshStats(router::rpc::RouterService::Stub& stub) {
  auto get = [&]() -> std::optional<router::rpc::RouterStats> {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    router::rpc::RouterStats stats;
    if (!stub.GetStats(&context, router::rpc::GetStatsRequest(), &stats).ok()) return std::nullopt;
    return stats;
  };
  std::optional<router::rpc::RouterStats> first = get();
  if (!first.has_value()) return std::nullopt;
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (absl::Now() < until) {
    std::optional<router::rpc::RouterStats> now = get();
    if (!now.has_value()) return std::nullopt;
    if (now->polls() >= first->polls() + 2) return now;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return std::nullopt;
}

struct EngineTotals {
  int64_t local = 0, remote = 0, bytes = 0, tokens = 0;
};

EngineTotals Totals(const router::rpc::RouterStats& s) {
  EngineTotals t;
  for (const router::rpc::RankStats& r : s.ranks()) {
    t.local += r.local_activations();
    t.remote += r.remote_activations();
    t.bytes += r.a2a_bytes();
    t.tokens += r.tokens();
  }
  return t;
}

nlohmann::json Summary(const router::PercentileSummary& s) {
  return {{"count", s.count}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"mean", s.mean}};
}

}  // namespace

nlohmann::json LoadResult::ToJson() const {
  nlohmann::json ranks = nlohmann::json::object();
  for (const auto& [rank, n] : per_rank) ranks[std::to_string(rank)] = n;
  return {{"rate", options.rate},
          {"concurrency", options.concurrency},
          {"duration_s", absl::ToDoubleSeconds(options.duration)},
          {"max_tokens", options.max_tokens},
          {"slo_ttft_ms", options.slo_ttft_ms},
          {"slo_tpot_ms", options.slo_tpot_ms},
          {"seconds", seconds},
          {"sent", sent},
          {"completed", completed},
          {"failed", failed},
          {"rejected", rejected},
          {"throughput_rps", throughput_rps},
          {"output_tokens_per_s", output_tokens_per_s},
          {"goodput_rps", goodput_rps},
          {"slo_attainment", slo_attainment},
          {"ttft_ms", Summary(ttft_ms)},
          {"tpot_ms", Summary(tpot_ms)},
          {"e2e_ms", Summary(e2e_ms)},
          {"mean_rank_lar", mean_rank_lar},
          {"lar", lar},
          {"a2a_bytes_per_token", a2a_bytes_per_token},
          {"per_rank", ranks},
          {"errors", errors},
          {"errors_by_code", errors_by_code},
          {"backoff_s", backoff_s}};
}

absl::StatusOr<LoadResult> RunLoad(router::rpc::RouterService::Stub& stub,
                                   const std::vector<Prompt>& prompts, const LoadOptions& options) {
  if ((options.rate > 0) == (options.concurrency > 0)) {
    return absl::InvalidArgumentError("give either a rate (open loop) or a concurrency, not both");
  }
  if (prompts.empty()) return absl::InvalidArgumentError("no prompts");
  if (options.duration <= absl::ZeroDuration() || options.max_tokens < 0) {
    return absl::InvalidArgumentError("the duration must be > 0 and max_tokens ≥ 0");
  }
  const std::optional<router::rpc::RouterStats> before = FreshStats(stub);
  Runner runner(stub, prompts, options);
  LoadResult result = runner.Run();
  const std::optional<router::rpc::RouterStats> after =
      before.has_value() ? FreshStats(stub) : std::nullopt;
  if (after.has_value()) {
    const EngineTotals a = Totals(*before), b = Totals(*after);
    const int64_t local = b.local - a.local, remote = b.remote - a.remote;
    if (local + remote > 0) result.lar = static_cast<double>(local) / (local + remote);
    if (b.tokens > a.tokens) {
      result.a2a_bytes_per_token = static_cast<double>(b.bytes - a.bytes) / (b.tokens - a.tokens);
    }
  }
  return result;
}

absl::StatusOr<SweepResult> Sweep(router::rpc::RouterService::Stub& stub,
                                  const std::vector<Prompt>& prompts, LoadOptions options,
                                  const std::vector<double>& rates, double target_attainment) {
  if (rates.empty()) return absl::InvalidArgumentError("a sweep needs rates");
  std::vector<double> sorted(rates);
  std::sort(sorted.begin(), sorted.end());
  SweepResult out;
  options.concurrency = 0;
  for (double rate : sorted) {
    if (!(rate > 0)) return absl::InvalidArgumentError("sweep rates must be > 0");
    options.rate = rate;
    absl::StatusOr<LoadResult> r = RunLoad(stub, prompts, options);
    if (!r.ok()) return r.status();
    if (r->slo_attainment >= target_attainment) out.best_rate = rate;
    out.points.push_back(*std::move(r));
  }
  return out;
}

absl::StatusOr<SweepResult> SearchMaxRate(router::rpc::RouterService::Stub& stub,
                                          const std::vector<Prompt>& prompts, LoadOptions options,
                                          double start_rate, double max_rate, int bisect_steps,
                                          double target_attainment,
                                          const std::function<void(const LoadResult&)>& on_point) {
  if (!(start_rate > 0) || !(max_rate >= start_rate) || bisect_steps < 0) {
    return absl::InvalidArgumentError("the search needs 0 < start rate ≤ max rate");
  }
  SweepResult out;
  options.concurrency = 0;
  auto holds = [&](double rate) -> absl::StatusOr<bool> {
    options.rate = rate;
    absl::StatusOr<LoadResult> r = RunLoad(stub, prompts, options);
    if (!r.ok()) return r.status();
    const bool ok = r->slo_attainment >= target_attainment;
    if (ok) out.best_rate = std::max(out.best_rate, rate);
    if (on_point) on_point(*r);
    out.points.push_back(*std::move(r));
    return ok;
  };
  double good = 0, bad = 0;
  for (double rate = start_rate;; rate = std::min(2 * rate, max_rate)) {
    absl::StatusOr<bool> ok = holds(rate);
    if (!ok.ok()) return ok.status();
    if (!*ok) {
      bad = rate;
      break;
    }
    good = rate;
    if (rate >= max_rate) return out;  // In SLO all the way up.
  }
  for (int step = 0; step < bisect_steps && good > 0; ++step) {
    const double mid = (good + bad) / 2;
    absl::StatusOr<bool> ok = holds(mid);
    if (!ok.ok()) return ok.status();
    (*ok ? good : bad) = mid;
  }
  return out;
}

}  // namespace semmoe::tools
