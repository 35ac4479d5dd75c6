// StepPredictor: the router's forecast of one MoE layer of the group's next step (router --policy
// time, router/rebatch/assigner.h), from what a router knows when it places a window — each
// rank's sequences in flight and their context, each new request's prompt length and its
// expected share of activations per rank (planner/affinity/prompt_scores.h PromptShares under
// the active placement) — with StepCost's terms, the ones the scale model steps with:
//   the slowest rank's attention (its decodes, its context, the new prompts prefilled on it,
//   within its step's token budget), then the row-count exchange, the dispatch and combine
//   collectives (their busiest link) and the busiest rank's experts.
// Rows are expectations: a token whose activations fall on rank d with share p_d sends d a row
// with probability 1 − (1 − p_d)^top_k; with node dedup (the two-stage exchange) it sends a
// remote node's gateway one row with probability 1 − (1 − q_n)^top_k (q_n: the node's share),
// which fans it out inside. Decodes already running count as spread evenly (the router does not
// know where their experts fall); a rank's experts are E / G, of which the expected distinct
// ones its rows touch are active.
//
// Immutable after construction; thread-safe.
#ifndef SEMMOE_PLANNER_SIM_STEP_PREDICTOR_H_
#define SEMMOE_PLANNER_SIM_STEP_PREDICTOR_H_

#include <cstdint>
#include <vector>

#include "planner/placement/topology.h"
#include "planner/sim/cluster_profile.h"
#include "planner/sim/model_shape.h"
#include "planner/sim/step_cost.h"

namespace semmoe::planner::sim {

// A rank as the router sees it.
struct RankState {
  int64_t sequences = 0;       // Requests in flight (each decodes a token a step).
  int64_t context_tokens = 0;  // Their tokens (prompt + new), the KV a decode step streams.
  // Of their prompts, the tokens not yet prefilled: the next step's prefill before any new
  // request's (spread evenly: where their experts fall is not kept).
  int64_t prefill_tokens = 0;
};

// A request of the window.
struct NewRequest {
  int64_t prompt_tokens = 0;
  std::vector<double> share;  // Per rank, summing to 1; empty: even over the ranks.
};

struct PredictorOptions {
  int64_t max_batch_tokens = 2048;  // Per rank and step (engine serve's default).
  int max_running = 64;             // Sequences a rank decodes at once.
  bool node_dedup = false;          // The two-stage exchange (taken with several nodes).
};

class StepPredictor {
 public:
  // REQUIRES: CheckShape(shape) ok.
  StepPredictor(ModelShape shape, ClusterProfile profile, planner::Topology topology,
                PredictorOptions options = {});

  int num_ranks() const { return topo_.num_ranks(); }
  const planner::Topology& topology() const { return topo_; }

  // The predicted time (seconds) of one MoE layer of the next step, attention included, with
  // window[i] prefilled on rank placed[i] (−1: not placed). REQUIRES: ranks.size() ==
  // num_ranks(), placed.size() == window.size(), every share empty or num_ranks() long.
  double LayerTime(const std::vector<RankState>& ranks, const std::vector<NewRequest>& window,
                   const std::vector<int>& placed) const;
  // LayerTime with window[i] on each rank in turn (placed[i] ignored; the others as placed):
  // one value per rank, in O(G²) for all of them.
  std::vector<double> TimesFor(const std::vector<RankState>& ranks,
                               const std::vector<NewRequest>& window,
                               const std::vector<int>& placed, int i) const;

 private:
  // Every term of a layer but the one request under evaluation.
  struct Partial;
  Partial Build(const std::vector<RankState>& ranks, const std::vector<NewRequest>& window,
                const std::vector<int>& placed, int skip) const;
  // Adds `tokens` tokens on rank s whose activations fall by `share` (per rank).
  void AddTokens(Partial& p, int s, double tokens, const double* share) const;
  // A prompt prefilled on rank s in the next step, within its token budget; `new_context`: its
  // KV is not yet in the rank's context.
  void AddPrefill(Partial& p, int s, int64_t prompt_tokens, const double* share,
                  bool new_context) const;
  double Time(const Partial& p) const;

  ModelShape shape_;
  ClusterProfile profile_;
  planner::Topology topo_;
  PredictorOptions options_;
  StepCost cost_;
  double counts_time_ = 0;    // The row-count exchange: the same whatever is placed.
  std::vector<double> even_;  // 1 / G per rank.
};

}  // namespace semmoe::planner::sim

#endif  // SEMMOE_PLANNER_SIM_STEP_PREDICTOR_H_
