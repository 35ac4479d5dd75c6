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
#include "common/metrics.h"
#include "engine/proto/engine.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "router/core/latency_window.h"
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
};

class EngineGroup {
 public:
  explicit EngineGroup(const GroupOptions& options);

  const std::string& name() const { return options_.name; }
  int share_percent() const { return options_.share_percent; }
  int size() const { return static_cast<int>(stubs_.size()); }
  engine::rpc::EngineService::Stub& stub(int rank) { return *stubs_[rank]; }
  Rebatcher& rebatcher() { return *rebatcher_; }
  // The tables in use now (null: none).
  std::shared_ptr<const RouterTables> tables() const;

  // Asks every rank for its stats: whether it is usable, its LAR and counters.
  void Poll();
  double rank_lar(int rank) const;
  // Whether a rank reported, at the last poll, a placement rollout under way.
  bool rolling_out() const;

  void Received() {
    received_.fetch_add(1);
    admitted_since_poll_.fetch_add(1);
  }
  // The wait a request admitted now would face before its first token: the group's queue (the
  // engines' waiting requests at the last poll and those admitted since) over its recent
  // completion rate. Zero while nothing waits in the engines, and until the rate has been
  // measured for 2 s.
  struct WaitPrediction {
    absl::Duration wait;
    int64_t queued = 0;
    double rate_per_s = 0;
  };
  WaitPrediction PredictWait() const;
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
  std::atomic<int64_t> admitted_since_poll_{0};
  mutable absl::Mutex mu_;
  int64_t waiting_ ABSL_GUARDED_BY(mu_) = 0;      // Σ engines' waiting, last poll.
  double rate_per_s_ ABSL_GUARDED_BY(mu_) = 0;    // Completions, smoothed over ~5 s.
  double rate_seconds_ ABSL_GUARDED_BY(mu_) = 0;  // How long the rate has been measured.
  int64_t completed_at_poll_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_poll_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::vector<double> rank_lar_ ABSL_GUARDED_BY(mu_);
  std::vector<EngineCounters> counters_ ABSL_GUARDED_BY(mu_);
};

// A latency window's summary as the proto.
void FillPercentiles(const LatencyWindow& window, rpc::Percentiles* out);

// Which group serves a request: a deterministic hash (FNV-1a) of `key` (the user key, else the
// request id) into 100 buckets, cut by the groups' shares in order.
int ChooseGroup(const std::string& key, const std::vector<int>& share_percents);

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_CORE_ENGINE_GROUP_H_
