// RoutingSampler: a live routing trace from a serving Attention-DP rank, for the planner to read
// (planner/trace/trace_format.h) — to plan a version from real traffic (`planner build --traces`)
// and to see how far live routing drifted from the version's plan.
//
// A configurable share of requests is sampled when they start (seeded); every token a sampled
// request runs (prompt and generated) is recorded with its experts and gate weights at every MoE
// layer. Memory is bounded: at most `max_tokens` tokens are kept, the oldest dropped first (and
// counted). Flush writes what is kept as one trace file (atomically: readers never see half a
// trace), named `path`; a background thread flushes every `flush_interval`.
//
// A request is known by its KV sequence: a sequence seen again at position 0 is a new request (a
// preempted one that recomputes is then sampled afresh).
//
// Thread-safety: Observe is for the loop thread; Flush and stats are thread-safe.
#ifndef SEMMOE_ENGINE_PARALLEL_ROUTING_SAMPLER_H_
#define SEMMOE_ENGINE_PARALLEL_ROUTING_SAMPLER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "engine/model/forward_io.h"
#include "engine/text/config.h"
#include "planner/trace/trace_format.h"

namespace semmoe::engine {

struct RoutingSampleOptions {
  double share = 0;              // Of requests, in (0, 1].
  int64_t max_tokens = 1 << 18;  // Kept at most (each L × K experts and weights).
  std::string path;              // The trace file Flush writes.
  absl::Duration flush_interval = absl::Seconds(10);
  uint64_t seed = 1;
  std::string name_prefix = "live";  // Requests are named "<prefix>-<n>".
};

struct RoutingSampleStats {
  std::string path;
  double share = 0;
  int64_t requests = 0;        // Sampled so far.
  int64_t tokens = 0;          // Kept now.
  int64_t dropped_tokens = 0;  // Dropped for the bound.
  int64_t flushes = 0;
  std::string error;  // The last flush's error; "" when it wrote.
};

class RoutingSampler {
 public:
  // InvalidArgument for a share outside (0, 1], no path or max_tokens < 1.
  static absl::StatusOr<std::unique_ptr<RoutingSampler>> Create(const model::ModelConfig& config,
                                                                const RoutingSampleOptions& o);
  ~RoutingSampler();  // Stops the flusher and flushes once more.

  // After a pass over `batch` whose `out.routing` was collected (ForwardOptions).
  void Observe(absl::Span<const model::SequenceInput> batch, const model::ForwardOutput& out);
  absl::Status Flush();
  RoutingSampleStats stats() const;
  // Paused: passes do not collect routing for it (what sampling costs is measured against this).
  void set_paused(bool paused) { paused_ = paused; }
  bool paused() const { return paused_; }

 private:
  RoutingSampler(const model::ModelConfig& config, const RoutingSampleOptions& o);

  const RoutingSampleOptions options_;
  planner::trace::TraceHeader header_;
  std::mt19937_64 rng_;  // Loop thread.
  struct Seen {
    int64_t request = -1;  // −1: not sampled.
    int64_t pass = 0;
  };
  absl::flat_hash_map<const void*, Seen> sequences_;  // Loop thread.
  int64_t passes_ = 0;
  std::atomic<bool> paused_{false};

  mutable absl::Mutex mu_;
  std::deque<planner::trace::TraceToken> kept_ ABSL_GUARDED_BY(mu_);
  RoutingSampleStats stats_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex flush_mu_;  // One flush at a time.
  std::thread flusher_;
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_ROUTING_SAMPLER_H_
