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
//   least_loaded — the rank with the fewest tokens in flight.
// Load is tokens in flight: each request counts its prompt plus its max new tokens until it
// finishes. A rank that is marked unusable (down, or excluded for a retry) gets nothing.
//
// Thread-compatible.
#ifndef SEMMOE_ROUTER_REBATCH_ASSIGNER_H_
#define SEMMOE_ROUTER_REBATCH_ASSIGNER_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmoe::router {

enum class Policy { kSemantic, kRoundRobin, kLeastLoaded };
// "semantic", "round_robin", "least_loaded"; InvalidArgument naming the value otherwise.
absl::StatusOr<Policy> ParsePolicy(absl::string_view name);
const char* PolicyName(Policy policy);

struct RankLoad {
  int64_t tokens_in_flight = 0;
  int64_t kv_free_tokens = -1;  // KV cache room in tokens; negative: unknown (not limiting).
  bool usable = true;
};

struct PendingRequest {
  int64_t load_tokens = 0;   // Prompt + max new tokens.
  std::vector<double> fit;   // Per rank, higher is better; empty: no preference.
  std::vector<double> node_fit;  // Per node (with nodes), higher is better; empty: by rank.
  std::vector<int> exclude;  // Ranks not to use (e.g. one that just failed it).
};

class Assigner {
 public:
  // `node_of`: each rank's node (ranks sharing a node); empty: one node, placing by rank alone.
  Assigner(Policy policy, double balance_eps, std::vector<int> node_of = {})
      : policy_(policy), eps_(balance_eps), node_of_(std::move(node_of)) {
    for (int n : node_of_) nodes_ = std::max(nodes_, n + 1);
  }

  // One rank per request of the window (−1 when no rank is usable for it); `loads` gains each
  // assigned request's tokens.
  std::vector<int> Assign(const std::vector<PendingRequest>& window, std::vector<RankLoad>& loads);

  Policy policy() const { return policy_; }

 private:
  int LeastLoaded(const PendingRequest& request, const std::vector<RankLoad>& loads) const;

  Policy policy_;
  double eps_;
  std::vector<int> node_of_;
  int nodes_ = 0;
  int next_ = 0;  // Round-robin cursor.
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_REBATCH_ASSIGNER_H_
