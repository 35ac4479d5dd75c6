// The expert-parallel group scenario both backends' tests run (ep_forward_runner_test on the CPU
// emulation, engine/gpu:gpu_ep_group_test on a GPU): each rank, in its own thread, serves two
// ragged sequences of its own (Attention-DP; the last rank idles in the first pass, then
// prefills, then all decode) through its rank's forward, and must give what the single device
// (the product's CPU forward) gives for them — logits, routing and the per-sequence activation
// counts the placement implies. Then the group's exchange counters must add up.
#ifndef SEMMOE_ENGINE_FORWARD_TESTING_EP_GROUP_SCENARIO_H_
#define SEMMOE_ENGINE_FORWARD_TESTING_EP_GROUP_SCENARIO_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/forward_io.h"
#include "engine/model/weights.h"
#include "engine/parallel/moe_layer_counters.h"
#include "engine/text/config.h"
#include "planner/placement/placement.h"

namespace semmoe::engine::forward::testing {

// One rank's forward (a ForwardRunner's or a GpuTransformer's Forward).
using RankForward = std::function<absl::StatusOr<model::ForwardOutput>(
    absl::Span<const model::SequenceInput>, const model::ForwardOptions&)>;

// What a rank's passes should have made the exchange count.
struct RankExpectation {
  int64_t tokens = 0;             // Tokens per MoE layer.
  int64_t local_activations = 0;  // Over every MoE layer.
};

inline constexpr int kScenarioPages = 48, kScenarioPageSize = 4;

// Rank `rank` of `ranks`: its passes through `forward` (whose KV arena has kScenarioPages pages
// of kScenarioPageSize), each against the single device; gtest failures name rank and pass.
// Returns what its counters should show.
RankExpectation RunRankScenario(const model::ModelConfig& c, const model::ModelWeights& weights,
                                const planner::Placement& placement, int rank, int ranks,
                                const RankForward& forward);

// The group's counters (per rank, per MoE layer) against the ranks' expectations: each rank's
// tokens and local activations, every activation local or remote, every byte sent received
// (dispatch, combine and across nodes), and some sent; with `nodes`, some across nodes.
void CheckGroupCounters(const model::ModelConfig& c,
                        const std::vector<std::vector<MoeLayerCounters>>& counters,
                        const std::vector<RankExpectation>& expected, bool nodes);

}  // namespace semmoe::engine::forward::testing

#endif  // SEMMOE_ENGINE_FORWARD_TESTING_EP_GROUP_SCENARIO_H_
