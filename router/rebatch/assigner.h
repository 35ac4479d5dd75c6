// Which DP rank serves each request of a rebatching window (router/README.md). Policies:
//   semantic     — each request to the rank its prompt fits best (planner/affinity/prompt_scores.h
//                  log-likelihoods under the active placement), most decisive request first,
//                  among ranks whose load stays within (1 + eps) × the mean plus one request
//                  (the window's largest) and whose KV cache has room; a request that fits nowhere,
//                  or has no scores (no tables yet), goes to the least-loaded rank; with nodes
//                  (ranks grouped, `node_of`), the node the prompt fits best first (its
//                  node_fit), then within it the rank it fits best that has room (ties: the
//                  less loaded); the next node when none of the node's ranks has room;
//   round_robin  — rank after rank, skipping unusable ones;
//   least_loaded — the rank with the fewest tokens in flight;
//   time         — the placement of the window that the step-cost model predicts fastest
//                  (planner/sim/step_predictor.h: the group's next MoE layer, its slowest
//                  rank's attention, the collectives' busiest link, the busiest experts), from
//                  each request's expected share of activations per rank: requests largest
//                  first, each to the rank that keeps the predicted layer shortest (ties: the
//                  less loaded); then that window's prediction against least_loaded's and
//                  round_robin's on the same window, the fastest kept (ties: least_loaded,
//                  round_robin, time) — so it never predicts worse than either. Locality is
//                  bought where the dispatch's links decide the layer and the straggler does
//                  not grow; where compute or balance decides, the choice is the balanced one.
//                  With nodes and node dedup, a node's share becomes one row per remote node,
//                  so the rule picks a node by affinity and the rank inside it by load.
// Load is tokens in flight: each request counts its prompt plus its max new tokens until it
// finishes. A rank that is marked unusable (down, or excluded for a retry) gets nothing.
//
// Thread-compatible.
#ifndef SEMMOE_ROUTER_REBATCH_ASSIGNER_H_
#define SEMMOE_ROUTER_REBATCH_ASSIGNER_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "planner/sim/step_predictor.h"

namespace semmoe::router {

enum class Policy { kSemantic, kRoundRobin, kLeastLoaded, kTime };
// "semantic", "round_robin", "least_loaded", "time"; InvalidArgument naming the value otherwise.
absl::StatusOr<Policy> ParsePolicy(absl::string_view name);
const char* PolicyName(Policy policy);

struct RankLoad {
  int64_t tokens_in_flight = 0;
  int64_t kv_free_tokens = -1;  // KV cache room in tokens; negative: unknown (not limiting).
  bool usable = true;
  int64_t sequences = 0;  // Requests in flight (the time rule's decodes).
  // Prompt tokens placed here and not yet prefilled (the time rule's queued prefills).
  int64_t prefill_tokens = 0;
};

struct PendingRequest {
  int64_t load_tokens = 0;       // Prompt + max new tokens.
  std::vector<double> fit;       // Per rank, higher is better; empty: no preference.
  std::vector<double> node_fit;  // Per node (with nodes), higher is better; empty: by rank.
  std::vector<int> exclude;      // Ranks not to use (e.g. one that just failed it).
  int64_t prompt_tokens = 0;     // The time rule's prefill (0: load_tokens).
  // Per rank, the prompt's expected share of activations (planner::PromptShares); empty: even.
  std::vector<double> share;
};

// What the time rule predicts a window's placements at (for stats and tests).
struct TimeChoice {
  const char* rule = "";  // "time", "least_loaded" or "round_robin": the one kept.
  double time_s = 0, least_loaded_s = 0, round_robin_s = 0;  // Predicted MoE layer each.
  double kept_s = 0;                                         // The kept one's.
};

class Assigner {
 public:
  // `node_of`: each rank's node (ranks sharing a node); empty: one node, placing by rank alone.
  // `predictor`: the time rule's model (REQUIRED for Policy::kTime; its ranks the loads').
  Assigner(Policy policy, double balance_eps, std::vector<int> node_of = {},
           std::shared_ptr<const planner::sim::StepPredictor> predictor = nullptr)
      : policy_(policy),
        eps_(balance_eps),
        node_of_(std::move(node_of)),
        predictor_(std::move(predictor)) {
    for (int n : node_of_) nodes_ = std::max(nodes_, n + 1);
  }

  // One rank per request of the window (−1 when no rank is usable for it); `loads` gains each
  // assigned request's tokens.
  std::vector<int> Assign(const std::vector<PendingRequest>& window, std::vector<RankLoad>& loads);

  Policy policy() const { return policy_; }
  // The time rule's last window (zeros before one, or under other policies).
  const TimeChoice& last_time_choice() const { return last_time_; }

 private:
  int LeastLoaded(const PendingRequest& request, const std::vector<RankLoad>& loads) const;
  std::vector<int> AssignRoundRobin(const std::vector<PendingRequest>& window,
                                    std::vector<RankLoad>& loads, int& cursor) const;
  std::vector<int> AssignLeastLoaded(const std::vector<PendingRequest>& window,
                                     std::vector<RankLoad>& loads) const;
  std::vector<int> AssignTime(const std::vector<PendingRequest>& window,
                              std::vector<RankLoad>& loads);

  Policy policy_;
  double eps_;
  std::vector<int> node_of_;
  int nodes_ = 0;
  int next_ = 0;  // Round-robin cursor.
  std::shared_ptr<const planner::sim::StepPredictor> predictor_;
  TimeChoice last_time_;
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_REBATCH_ASSIGNER_H_
