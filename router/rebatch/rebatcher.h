// The rebatching window: requests that arrive close together are placed together, so the
// assigner (assigner.h) can weigh them against each other and against the ranks' load. A window
// opens with its first request and closes after `window` — earlier when it holds
// `max_window_requests`, or when a queued request reaches the latest time it may wait
// (`hold_until`, from its TTFT budget): the window adapts and never holds a request past it.
//
// The rebatcher also keeps each rank's load (tokens in flight): a placed request counts until
// Finished() is called for it.
//
// Thread-safe. Callbacks run on the rebatcher's thread, never under its lock.
#ifndef SEMMOE_ROUTER_REBATCH_REBATCHER_H_
#define SEMMOE_ROUTER_REBATCH_REBATCHER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "router/rebatch/assigner.h"

namespace semmoe::router {

struct RebatcherOptions {
  Policy policy = Policy::kSemantic;
  double balance_eps = 0.05;
  absl::Duration window = absl::Milliseconds(2);
  int max_window_requests = 256;
  // Each rank's node (router --topology); empty: one node (Assigner's `node_of`).
  std::vector<int> node_of;
  // Policy::kTime: the step-cost model of this group's ranks (planner/sim/step_predictor.h).
  std::shared_ptr<const planner::sim::StepPredictor> predictor;
  // Whose time windows and budgets (hold_until) are measured in. Borrowed; never null.
  Clock* clock = Clock::Real();
};

// The time rule's windows: which rule's placement each kept (assigner.h), and the last one's
// predicted MoE layer against the better vanilla rule's.
struct TimeRuleCounters {
  int64_t kept_time = 0, kept_least_loaded = 0, kept_round_robin = 0;
  double last_predicted_s = 0, last_vanilla_s = 0;
};

struct RankCounters {
  RankLoad load;
  int64_t requests_in_flight = 0;
  int64_t assigned = 0;
};

class Rebatcher {
 public:
  // Called once with the chosen rank, or −1 when no rank is usable (or the rebatcher stopped).
  using OnPlaced = std::function<void(int rank)>;

  Rebatcher(int ranks, const RebatcherOptions& options);
  ~Rebatcher();  // Stops; requests still queued are told −1.

  // `hold_until`: the latest time (options.clock's) the request may wait in the window.
  void Submit(PendingRequest request, absl::Time hold_until, OnPlaced on_placed);
  // A placed request ended (however): its load leaves `rank`, and `unprefilled_tokens` of its
  // prompt if it ended before its first token.
  void Finished(int rank, int64_t load_tokens, int64_t unprefilled_tokens = 0);
  // A placed request's first token came: its prompt is no longer queued for prefill at `rank`.
  void Prefilled(int rank, int64_t prompt_tokens);
  void SetUsable(int rank, bool usable);
  void SetKvFree(int rank, int64_t tokens);  // Negative: unknown.

  std::vector<RankCounters> Ranks() const;
  TimeRuleCounters time_rule() const;
  int64_t Queued() const;
  int num_ranks() const { return static_cast<int>(ranks_.size()); }
  Policy policy() const { return options_.policy; }

 private:
  struct Queued_ {
    PendingRequest request;
    absl::Time hold_until;
    OnPlaced on_placed;
  };
  void Loop();

  const RebatcherOptions options_;
  mutable absl::Mutex mu_;
  std::vector<RankCounters> ranks_ ABSL_GUARDED_BY(mu_);
  std::vector<Queued_> queue_ ABSL_GUARDED_BY(mu_);
  absl::Time window_opened_ ABSL_GUARDED_BY(mu_);
  TimeRuleCounters time_rule_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  Assigner assigner_;  // Only the loop thread uses it.
  std::thread thread_;
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_REBATCH_REBATCHER_H_
