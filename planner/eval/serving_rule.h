// ServingRule: which device serves each activation of a trace under a placement, as the engine's
// dispatch rules it (engine/parallel/dispatch_plan.h) — the one rule `planner eval` and the scale
// model (planner/sim) replay: the token's own device when it holds the expert (home or replica);
// else, with replicas, the per-batch holder choice (planner/placement/holder_choice.h) made per
// window of consecutive trace tokens from every device's demand in the window, its shares consumed
// in token order; else the expert's home.
#ifndef SEMMOE_PLANNER_EVAL_SERVING_RULE_H_
#define SEMMOE_PLANNER_EVAL_SERVING_RULE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/placement/placement.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

// The schedules the rule is replayed over, checked (the same errors for `planner eval` and the
// scale model). InvalidArgument unless the placement has the trace's MoE layers and experts.
absl::Status CheckPlacementFits(const trace::TraceSet& trace, const Placement& placement);
// Each token's device under a request → device schedule (attention-DP); InvalidArgument naming a
// wrong count or a device outside [0, num_devices).
absl::StatusOr<std::vector<int>> TokenDevicesOfRequests(const trace::TraceSet& trace,
                                                        const std::vector<int>& request_device,
                                                        int num_devices);
// InvalidArgument unless token_device (attention-TP) has a row of one device in range per token
// for every MoE layer.
absl::Status CheckTokenDevices(const trace::TraceSet& trace,
                               const std::vector<std::vector<int>>& token_device,
                               int num_devices);

class ServingRule {
 public:
  // device_of_token(layer, t): the device token t sits on at MoE layer `layer`. `window`: tokens
  // per holder-choice batch (EvalOptions::holder_choice_batch_tokens); ignored without replicas.
  // All borrowed; they outlive this.
  ServingRule(const trace::TraceSet& trace, const Placement& placement,
              std::function<int(int, int64_t)> device_of_token, int64_t window);

  // Call once per token before Serve, tokens 0, 1, ... of one layer in order (a new layer starts
  // again at token 0).
  void BeginToken(int layer, int64_t t);
  // The device serving `expert` for a token on `home` at `layer`.
  int Serve(int layer, int expert, int home);

 private:
  const trace::TraceSet& trace_;
  const Placement& placement_;
  const std::function<int(int, int64_t)> device_of_token_;
  const int64_t window_;  // 0: no holder choice.
  std::vector<std::vector<int32_t>> left_;  // [device × experts] shares left per holder.
  std::vector<int32_t> demand_;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_EVAL_SERVING_RULE_H_
