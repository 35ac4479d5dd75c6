// The serving loop of the scale model (docs/SIMULATE.md, "The serving loop"): requests arrive as a
// Poisson process, each one of the trace's requests in turn (its tokens the prompt, their routing
// the replay's); the engine steps all ranks together (expert parallelism makes every step a
// collective), each step taking every running sequence's next token and prefill chunks within a
// token budget; each step's time is StepCost's, from the exact rows and expert activations of
// the tokens in it (planner/sim/replay.h). Gives the MoE-layer time and its parts, the step time,
// TTFT / TPOT distributions and the goodput under an SLO.
#ifndef SEMMOE_PLANNER_SIM_SERVING_SIM_H_
#define SEMMOE_PLANNER_SIM_SERVING_SIM_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/sim/model_shape.h"
#include "planner/sim/replay.h"
#include "planner/sim/step_cost.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner::sim {

struct Workload {
  double rate = 4;                // Requests per second (Poisson arrivals).
  int64_t requests = 1000;        // How many arrive.
  int output_tokens = 32;         // Tokens each generates (the first from its prefill step).
  int64_t max_prompt_tokens = 0;  // Cut longer trace requests to this many (0: whole).
  uint64_t seed = 1;
};

enum class AttentionMode { kDp, kTp };

// What an online router knows when a request arrives: per rank the tokens in flight (prompt +
// output tokens of the requests it holds), the requests in flight and the prompt tokens not yet
// prefilled; the request's trace request, load (prompt + output tokens) and prompt.
struct RouteQuery {
  int trace_request = 0;
  const std::vector<int64_t>& tokens_in_flight;
  const std::vector<int64_t>& requests_in_flight;
  const std::vector<int64_t>& prefill_tokens;
  int64_t load_tokens = 0, prompt_tokens = 0;
};

struct ServingOptions {
  AttentionMode mode = AttentionMode::kDp;
  // Tokens per step: per rank under DP, the group's under TP; sequences running at once, the
  // same (engine serve's defaults).
  int64_t max_batch_tokens = 2048;
  int max_running = 64;
  double slo_ttft_s = 1.0, slo_tpot_s = 0.2;  // A request is good when it meets both.
  // Node-level dedup (the two-stage exchange) over StepCost's topology; taken only when it has
  // several nodes of several ranks, as the engine does.
  bool node_dedup = false;
  // DP: the online router — a request's rank when it arrives (RouteQuery). Empty: the replay's
  // request → rank (planner eval's offline rule).
  std::function<int(const RouteQuery&)> route;
  // A prompt prefilled in one step counts as one precomputed sum per layer (its tokens' rows to
  // each rank, activations per rank, experts touched) instead of token by token — the same
  // counts, faster. Taken under DP without replicas or node dedup.
  bool aggregate_prefills = true;
};

struct Quantiles {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};

struct SimResult {
  // Means over every MoE-layer call of every step (the slowest rank's view, as the lab reports).
  MoeTime moe;
  double attention_s = 0;       // Per layer, the slowest rank.
  double srs_s = 0, sag_s = 0;  // Attention-TP: the reduce-scatter and all-gather per layer.
  double step_s = 0;            // Mean step.
  int64_t steps = 0;
  Quantiles ttft_s, tpot_s;
  double duration_s = 0;  // First arrival to last completion.
  double throughput_rps = 0, goodput_rps = 0, slo_attainment = 0;
  int64_t tokens = 0;                      // Tokens through the model (prefill and decode).
  int64_t moe_calls = 0, layer_calls = 0;  // What the means above are over.
  int64_t requests = 0;
  bool two_stage = false;  // Whether node dedup was taken.
  double a2a_share() const {
    return moe.total() > moe.wait ? moe.a2a() / (moe.total() - moe.wait) : 0;
  }
};

// REQUIRES: replay made from `trace` (same tokens and MoE layers), shape's MoE layers =
// trace's. InvalidArgument when they do not match or the options are out of range.
absl::StatusOr<SimResult> Simulate(const trace::TraceSet& trace, const Replay& replay,
                                   const ModelShape& shape, const StepCost& cost,
                                   const Workload& workload, const ServingOptions& options);

}  // namespace semmoe::planner::sim

#endif  // SEMMOE_PLANNER_SIM_SERVING_SIM_H_
