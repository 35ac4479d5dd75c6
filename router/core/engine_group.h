// One group of Attention-DP engine ranks behind the router — an A/B arm, or the only group: its
// connections, its rebatcher (placement and load), what the poller last heard from its engines,
// and the latency of the requests it served.
//
// Thread-safe.
#ifndef SEMMOE_ROUTER_CORE_ENGINE_GROUP_H_
#define SEMMOE_ROUTER_CORE_ENGINE_GROUP_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "engine/proto/engine.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "router/core/latency_window.h"
#include "router/core/load_window.h"
#include "router/proto/router.pb.h"
#include "router/rebatch/rebatcher.h"
#include "router/tables/engine_follow.h"
#include "router/tables/router_tables.h"

namespace semmoe::router {

struct GroupOptions {
  std::string name;  // "" for the only group.
  int share_percent = 100;
  std::vector<std::string> ranks;  // Engine addresses, rank order.
  TablesHolder* tables = nullptr;  // Borrowed; null: placement by load alone.
  // Borrowed; keeps `tables` on the version the engines serve (null: the tables are fixed).
  EngineFollow* follow = nullptr;
  RebatcherOptions rebatch;
  double slo_ttft_ms = 1000, slo_tpot_ms = 200;  // For goodput.
  // The expert load (ArmStats.layer_loads) covers the last half to whole of this
  // (router/core/load_window.h), not the time since the engines started.
  absl::Duration load_window = absl::Seconds(60);
  Clock* clock = Clock::Real();  // Times the first-token rate (PredictWait); tests move a fake.
};

class EngineGroup {
 public:
  explicit EngineGroup(const GroupOptions& options);

  const std::string& name() const { return options_.name; }
  int share_percent() const { return options_.share_percent; }
  int size() const { return static_cast<int>(stubs_.size()); }
  engine::rpc::EngineService::Stub& stub(int rank) { return *stubs_[rank]; }
  Rebatcher& rebatcher() { return *rebatcher_; }
  // Each rank's node (the router's --topology; empty: one node).
  const std::vector<int>& node_of() const { return options_.rebatch.node_of; }
  // The tables in use now (null: none).
  std::shared_ptr<const RouterTables> tables() const;

  // Asks every rank for its stats: whether it is usable, its LAR and counters.
  void Poll();
  double rank_lar(int rank) const;
  // Whether a rank reported, at the last poll, a placement rollout under way.
  bool rolling_out() const;

  // Admission's cost model, in prompt tokens. A call admitted with `prompt_tokens` waits for its
  // first token (queued in the window or an engine, or in prefill) until FirstToken, or until it
  // ends without one (Unstarted).
  void Received(int64_t prompt_tokens) {
    received_.fetch_add(1);
    pending_prefill_.fetch_add(prompt_tokens);
  }
  void FirstToken(int64_t prompt_tokens) {
    pending_prefill_.fetch_sub(prompt_tokens);
    prefilled_.fetch_add(prompt_tokens);
  }
  void Unstarted(int64_t prompt_tokens) { pending_prefill_.fetch_sub(prompt_tokens); }

  // The wait before its first token a request of `prompt_tokens` admitted now would face: the
  // prompt tokens ahead of it that wait for their first token (known at once: a burst counts as
  // it arrives, never a poll later), its own included, over the rate at which the group gives
  // prompt tokens their first token (sampled every 100 ms while some wait; SampleRate). By
  // Little's law that is the wait a queue of that many tokens sees; a long prompt ahead weighs by
  // its length, and a group whose batch slots are full prefills slower, which the rate shows.
  // Zero while nothing waits, and until the rate has been measured over kMinRateSeconds of
  // waiting (a cold router admits that long unmeasured: at 200 requests/s, ~100 requests).
  struct WaitPrediction {
    absl::Duration wait;
    int64_t queued_tokens = 0;  // Prompt tokens ahead, its own included.
    double tokens_per_s = 0;    // The measured first-token rate, in prompt tokens.
  };
  WaitPrediction PredictWait(int64_t prompt_tokens);
  static constexpr double kMinRateSeconds = 0.5;
  void Failed() { failed_.fetch_add(1); }
  void Completed(const rpc::FinalRecord& final);

  void Fill(rpc::ArmStats& out) const;

  // Since the router started, for /metrics: latency histograms (seconds) and prompt tokens.
  struct Telemetry {
    metrics::HistogramSnapshot ttft, tpot, e2e, queue;
    int64_t prompt_tokens = 0;
  };
  Telemetry telemetry() const;
  // The arm's metrics as recorded in the planner's experiment (RecordArmMetrics).
  nlohmann::json MetricsJson() const;

 private:
  struct EngineCounters {
    std::string down_reason;  // "" while the rank answers and takes requests.
    absl::Time down_since = absl::InfinitePast();
    int64_t local = 0, remote = 0, a2a_bytes = 0, tokens = 0;
    // Σ over MoE layers of dispatch + expert + combine seconds, and of the layers' calls.
    double moe_seconds = 0;
    int64_t moe_calls = 0;
    // The activations its experts ran per MoE layer and expert id, over the last load_span.
    ExpertLoad load;
    absl::Duration load_span;
    int64_t placement_version = 0;
    engine::rpc::RolloutStats rollout;
  };

  const GroupOptions options_;
  const absl::Time started_;
  std::vector<std::unique_ptr<engine::rpc::EngineService::Stub>> stubs_;
  std::unique_ptr<Rebatcher> rebatcher_;
  std::atomic<int64_t> received_{0}, completed_{0}, failed_{0}, within_slo_{0},
      completion_tokens_{0}, prompt_tokens_{0};
  LatencyWindow ttft_, tpot_, e2e_;
  metrics::Histogram ttft_s_{metrics::LatencyBuckets()}, tpot_s_{metrics::LatencyBuckets()},
      e2e_s_{metrics::LatencyBuckets()}, queue_s_{metrics::LatencyBuckets()};
  std::atomic<int64_t> pending_prefill_{0};  // Prompt tokens waiting for their first token.
  std::atomic<int64_t> prefilled_{0};        // Prompt tokens given their first token, ever.
  mutable absl::Mutex mu_;
  double rate_per_s_ ABSL_GUARDED_BY(mu_) = 0;    // Prefilled tokens/s while busy.
  double rate_seconds_ ABSL_GUARDED_BY(mu_) = 0;  // How long the rate has been measured.
  double busy_tokens_ ABSL_GUARDED_BY(mu_) = 0;   // Prefilled over the first 5 s of it.
  absl::Time last_sample_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int64_t prefilled_at_sample_ ABSL_GUARDED_BY(mu_) = 0;
  bool busy_at_sample_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<double> rank_lar_ ABSL_GUARDED_BY(mu_);
  std::vector<EngineCounters> counters_ ABSL_GUARDED_BY(mu_);
  std::vector<LoadWindow> load_windows_ ABSL_GUARDED_BY(mu_);

  void SampleRate(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

// A latency window's summary as the proto.
void FillPercentiles(const LatencyWindow& window, rpc::Percentiles* out);

// Which group serves a request: a deterministic hash (FNV-1a) of `key` (the user key, else the
// request id) into 100 buckets, cut by the groups' shares in order.
int ChooseGroup(const std::string& key, const std::vector<int>& share_percents);

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_CORE_ENGINE_GROUP_H_
