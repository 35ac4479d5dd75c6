#include "router/rebatch/rebatcher.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace semmoe::router {

Rebatcher::Rebatcher(int ranks, const RebatcherOptions& options)
    : options_(options),
      ranks_(ranks),
      assigner_(options.policy, options.balance_eps, options.node_of, options.predictor) {
  thread_ = std::thread([this] { Loop(); });
}

Rebatcher::~Rebatcher() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void Rebatcher::Submit(PendingRequest request, absl::Time hold_until, OnPlaced on_placed) {
  {
    absl::MutexLock lock(&mu_);
    if (!stop_) {
      if (queue_.empty()) window_opened_ = options_.clock->Now();
      queue_.push_back({std::move(request), hold_until, std::move(on_placed)});
      return;
    }
  }
  on_placed(-1);
}

void Rebatcher::Finished(int rank, int64_t load_tokens, int64_t unprefilled_tokens) {
  absl::MutexLock lock(&mu_);
  if (rank < 0 || rank >= static_cast<int>(ranks_.size())) return;
  RankCounters& r = ranks_[rank];
  r.load.tokens_in_flight = std::max<int64_t>(0, r.load.tokens_in_flight - load_tokens);
  r.load.prefill_tokens = std::max<int64_t>(0, r.load.prefill_tokens - unprefilled_tokens);
  r.requests_in_flight = std::max<int64_t>(0, r.requests_in_flight - 1);
}

void Rebatcher::Prefilled(int rank, int64_t prompt_tokens) {
  absl::MutexLock lock(&mu_);
  if (rank < 0 || rank >= static_cast<int>(ranks_.size())) return;
  int64_t& queued = ranks_[rank].load.prefill_tokens;
  queued = std::max<int64_t>(0, queued - prompt_tokens);
}

void Rebatcher::SetUsable(int rank, bool usable) {
  absl::MutexLock lock(&mu_);
  if (rank >= 0 && rank < static_cast<int>(ranks_.size())) ranks_[rank].load.usable = usable;
}

void Rebatcher::SetKvFree(int rank, int64_t tokens) {
  absl::MutexLock lock(&mu_);
  if (rank >= 0 && rank < static_cast<int>(ranks_.size()))
    ranks_[rank].load.kv_free_tokens = tokens;
}

std::vector<RankCounters> Rebatcher::Ranks() const {
  absl::MutexLock lock(&mu_);
  return ranks_;
}

TimeRuleCounters Rebatcher::time_rule() const {
  absl::MutexLock lock(&mu_);
  return time_rule_;
}

int64_t Rebatcher::Queued() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size());
}

void Rebatcher::Loop() {
  for (;;) {
    std::vector<Queued_> window;
    std::vector<int> placed;
    {
      absl::MutexLock lock(&mu_);
      // Wait for the window to close: its time is up, it is full, or a request must go now.
      auto closes = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        absl::Time at = window_opened_ + options_.window;
        for (const Queued_& q : queue_) at = std::min(at, q.hold_until);
        return at;
      };
      for (;;) {
        if (stop_) break;
        if (queue_.empty()) {
          mu_.AwaitWithTimeout(absl::Condition(
                                   +[](Rebatcher* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                     return self->stop_ || !self->queue_.empty();
                                   },
                                   this),
                               absl::Milliseconds(100));
          continue;
        }
        if (static_cast<int>(queue_.size()) >= options_.max_window_requests) break;
        const absl::Time at = closes();
        const absl::Time now = options_.clock->Now();
        if (now >= at) break;
        // Re-reads the clock at least every 50 ms of real time (an injected clock moves on its
        // own schedule).
        mu_.AwaitWithTimeout(absl::Condition(
                                 +[](Rebatcher* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                   return self->stop_ || static_cast<int>(self->queue_.size()) >=
                                                             self->options_.max_window_requests;
                                 },
                                 this),
                             std::min(at - now, absl::Milliseconds(50)));
      }
      window.swap(queue_);
      if (!stop_ && !window.empty()) {
        std::vector<PendingRequest> requests;
        requests.reserve(window.size());
        for (const Queued_& q : window) requests.push_back(q.request);
        std::vector<RankLoad> loads;
        for (const RankCounters& r : ranks_) {
          loads.push_back(r.load);
          loads.back().sequences = r.requests_in_flight;
        }
        placed = assigner_.Assign(requests, loads);
        if (options_.policy == Policy::kTime) {
          const TimeChoice& c = assigner_.last_time_choice();
          const std::string_view rule = c.rule;
          ++(rule == "time"          ? time_rule_.kept_time
             : rule == "round_robin" ? time_rule_.kept_round_robin
                                     : time_rule_.kept_least_loaded);
          time_rule_.last_predicted_s = c.kept_s;
          time_rule_.last_vanilla_s = std::min(c.least_loaded_s, c.round_robin_s);
        }
        for (size_t i = 0; i < window.size(); ++i) {
          if (placed[i] < 0) continue;
          RankCounters& r = ranks_[placed[i]];
          r.load.tokens_in_flight += window[i].request.load_tokens;
          r.load.prefill_tokens += window[i].request.prompt_tokens;
          ++r.requests_in_flight;
          ++r.assigned;
        }
      } else {
        placed.assign(window.size(), -1);
      }
    }
    for (size_t i = 0; i < window.size(); ++i) window[i].on_placed(placed[i]);
    absl::MutexLock lock(&mu_);
    if (stop_ && queue_.empty()) return;
  }
}

}  // namespace semmoe::router
