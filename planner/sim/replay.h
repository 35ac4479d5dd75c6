// Replay: a routing trace replayed under a placement by `planner eval`'s own rules — each token's
// device at every MoE layer (the router's request → device schedule under attention-DP, the
// token → device schedule under attention-TP) and the device serving each of its activations
// (planner/eval/serving_rule.h: own replica, holder choice, home) — for the scale model to count
// every step's rows exactly (planner/sim/serving_sim.h).
#ifndef SEMMOE_PLANNER_SIM_REPLAY_H_
#define SEMMOE_PLANNER_SIM_REPLAY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/placement/placement.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner::sim {

struct Replay {
  int devices = 0, layers = 0, top_k = 0, num_experts = 0;
  // With replicas the serving device depends on the token's rank; a token served from another
  // rank than the replay's (the online router's choice) is served as Placement::Serving says
  // (a local replica, else the home; no holder choice). A copy, shared by the replay's copies:
  // the replay outlives the placement it was made from (a Scenario moves both).
  std::shared_ptr<const Placement> placement;
  bool rank_dependent = false;
  int64_t tokens = 0;
  std::vector<uint8_t> token_device;  // [layers × tokens]
  std::vector<uint8_t> served;        // [tokens × layers × top_k]
  int Device(int layer, int64_t t) const { return token_device[layer * tokens + t]; }
  const uint8_t* Served(int64_t t, int layer) const {
    return served.data() + (t * layers + layer) * top_k;
  }
};

// Attention-DP: request r's tokens on request_device[r] at every layer. `window`: the holder
// choice's batch (EvalOptions::holder_choice_batch_tokens). InvalidArgument when the placement
// does not match the trace, a device is out of range, or there are more than 255 devices.
absl::StatusOr<Replay> ReplayDp(const trace::TraceSet& trace, const Placement& placement,
                                const std::vector<int>& request_device, int64_t window = 2048);
// Attention-TP: token_device[layer][t] (planner/eval: ContiguousChunks, SrsTokens).
absl::StatusOr<Replay> ReplayTp(const trace::TraceSet& trace, const Placement& placement,
                                const std::vector<std::vector<int>>& token_device,
                                int64_t window = 2048);

}  // namespace semmoe::planner::sim

#endif  // SEMMOE_PLANNER_SIM_REPLAY_H_
