// ServingBoard: what the engine groups that follow a model's active version report they serve
// (PlannerService.ReportServing, sent by each group's rank 0 every few seconds): the version,
// a rollout under way or refused, and the group's counters. The autopilot reads it to see its
// rollouts served or refused, and serving's own LAR and failures (autopilot.h).
//
// In memory: a restarted planner knows the groups again at their next report.
// Thread-safe.
#ifndef SEMMOE_PLANNER_AUTOPILOT_SERVING_BOARD_H_
#define SEMMOE_PLANNER_AUTOPILOT_SERVING_BOARD_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace semmoe::planner {

struct ServingState {
  std::string model;
  std::string group;  // Its rank 0's address: one entry per group.
  int ranks = 0;
  int64_t serving_version = 0;  // 0: a file or vanilla placement.
  int64_t rollout_target = 0;   // Being staged; 0: none.
  int64_t refused_version = 0;  // The latest version the group refused; 0: none.
  std::string refusal;          // Why.
  // The whole group's counters since it started, every rank's summed (they only grow, unless a
  // rank restarts).
  int64_t completed = 0;
  int64_t failed = 0;
  int64_t local_activations = 0;
  int64_t remote_activations = 0;
  // Of the completed requests: output tokens, and seconds from submission to the last token.
  int64_t output_tokens = 0;
  double request_seconds = 0;
  absl::Time at = absl::InfinitePast();  // When the planner received it.
};

// Counters summed over the groups of a model; the difference of two is what served between them.
struct ServingTotals {
  int64_t completed = 0, failed = 0, local = 0, remote = 0, output_tokens = 0;
  double request_seconds = 0;

  ServingTotals operator-(const ServingTotals& o) const {
    return {completed - o.completed,
            failed - o.failed,
            local - o.local,
            remote - o.remote,
            output_tokens - o.output_tokens,
            request_seconds - o.request_seconds};
  }
  // The completed requests' time per output token (submission to the last token over their
  // tokens): what goodput within a latency SLO rests on. 0 without tokens.
  double seconds_per_token() const {
    return output_tokens > 0 ? request_seconds / double(output_tokens) : 0.0;
  }
  int64_t activations() const { return local + remote; }
  double lar() const { return activations() > 0 ? double(local) / double(activations()) : 0.0; }
  // Failed share of the requests that ended.
  double failed_share() const {
    return completed + failed > 0 ? double(failed) / double(completed + failed) : 0.0;
  }
};

class ServingBoard {
 public:
  // InvalidArgument for a report without model or group, or with negative counters.
  absl::Status Report(ServingState state);

  // The model's groups that reported within `fresh` of `now`, by group.
  std::vector<ServingState> Of(const std::string& model, absl::Time now,
                               absl::Duration fresh) const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, ServingState> latest_ ABSL_GUARDED_BY(mu_);
};

// The groups' counters summed.
ServingTotals Sum(const std::vector<ServingState>& groups);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_AUTOPILOT_SERVING_BOARD_H_
