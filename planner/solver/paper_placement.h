// The paper's Algorithm 1 (Sem-MoE, attention-DP), implemented as described there so that
// "better than the paper's algorithm" is measured, not assumed (`planner build --algo paper`):
//   1. request clustering — each request's expert-activation profile (per layer, normalised) is
//      clustered into G groups by k-means; requests, longest first, join their nearest cluster
//      with token quota left ((1 + ε) · the mean load);
//   2. expert placement — per layer, experts by decreasing activations, each to the device with a
//      free slot that maximises α · (co-activation with the experts already there) + β ·
//      (activations by the device's requests) − γ · (the device's expert load), each term scaled
//      to [0, 1]; then random pairwise swaps between devices, kept when in-sample local
//      activations rise;
//   3. request schedule — requests, longest first, to the device holding most of their
//      activations among those with quota left; then step 2's swaps once more for it.
// Restarts from different seeds; the run with the most local activations is kept. Deterministic
// for a seed.
#ifndef SEMMOE_PLANNER_SOLVER_PAPER_PLACEMENT_H_
#define SEMMOE_PLANNER_SOLVER_PAPER_PLACEMENT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/placement/placement.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

struct PaperOptions {
  int num_devices = 8;
  double alpha = 1.0, beta = 1.0, gamma = 0.5;  // Expert affinity, request affinity, load.
  int swaps_per_layer = 2000;                   // Random swap attempts per layer and pass.
  int restarts = 3;
  int kmeans_rounds = 10;
  double token_balance_eps = 0.05;
  uint64_t seed = 0;
};

struct PaperSolution {
  Placement placement;
  std::vector<int> request_device;  // Step 3's schedule.
  double lar = 0;                   // In-sample, under that schedule.
};

// InvalidArgument when G does not divide the experts or the trace has no requests.
absl::StatusOr<PaperSolution> SolvePaper(const trace::TraceSet& trace,
                                         const PaperOptions& options);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SOLVER_PAPER_PLACEMENT_H_
