// Building a placement relative to the one being served, so that a rollout ships few expert
// weights (docs/PLANNER.md, "Re-planning with few moves"). A freshly solved placement labels its
// devices arbitrarily: as built it moves about (G − 1)/G of all experts even when it is the same
// placement. A migration therefore
//   1. relabels the candidate's devices — one permutation for all layers, so a DP request keeps
//      its rank — to keep the most experts where they are (a maximum-weight assignment over
//      devices; building the same placement with permuted labels moves nothing), and
//   2. limits the moves: per layer the experts that still move form cycles of devices (a → b → …
//      → a, each device giving as many experts as it takes, so every device keeps N/G). Starting
//      from the served placement it applies whole cycles, best gain in local activations per
//      expert moved first (on the candidate's own token schedule), until the cap on moved experts
//      is reached or the result is within `max_lar_loss` of the candidate's LAR on that schedule.
// Replicas (LimitReplicaChanges): a replica slot keeps weights its device already holds unless
// the budget left pays for the candidate's choice.
#ifndef SEMMOE_PLANNER_SOLVER_MIGRATION_H_
#define SEMMOE_PLANNER_SOLVER_MIGRATION_H_

#include <vector>

#include "absl/status/statusor.h"
#include "planner/placement/placement.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

struct MigrationOptions {
  // At most this many home experts (summed over layers) change device; negative: no cap.
  int max_moved = -1;
  // Stop applying moves once the result's local activations on the candidate's schedule are
  // within this fraction of all activations of the candidate's; negative: apply every move
  // (within max_moved) that gains.
  double max_lar_loss = -1;
};

struct MigrationPlan {
  Placement placement;  // Homes only (no replicas), in the served placement's device labels.
  // relabel[c]: the served device that candidate device c becomes.
  std::vector<int> relabel;
  int moved_as_built = 0;    // Home experts the candidate moves with its own labels.
  int moved_relabelled = 0;  // ... after relabelling (every cycle applied).
  int moved = 0;             // ... in `placement`.
  int cycles_total = 0, cycles_applied = 0;
  // Local-activation rate on the candidate's schedule (relabelled): the served placement's,
  // the candidate's and the result's.
  double lar_served = 0, lar_candidate = 0, lar_result = 0;
};

// Number of (layer, expert) homes that differ between two placements of the same shape.
int MovedExperts(const Placement& from, const Placement& to);

// `candidate` with device c renamed relabel[c] everywhere (homes and replicas). InvalidArgument
// unless relabel is a permutation of [0, G).
absl::StatusOr<Placement> RelabelDevices(const Placement& candidate, const std::vector<int>& relabel);

// `token_device[layer][token]`: the candidate's schedule of the traced tokens, in the candidate's
// own labels (a DP request schedule expanded to tokens, or a TP schedule). InvalidArgument when
// the placements or the schedule do not have the same layers, experts and devices.
absl::StatusOr<MigrationPlan> MigrateFrom(const Placement& served, const Placement& candidate,
                                      const trace::TraceSet& trace,
                                      const std::vector<std::vector<int>>& token_device,
                                      const MigrationOptions& options);

// `wanted` with its homes as given and its replicas limited against `served`: per layer and
// device, the candidate's replicas the device already holds weights for come first, then others
// while `*budget` (decremented per expert shipped; negative: no cap) lasts, then weights already
// resident (its old replicas, then experts that moved away). `*shipped` counts replica weights
// loaded. REQUIRES: same shape; wanted's homes in served's labels.
absl::StatusOr<Placement> LimitReplicaChanges(const Placement& served, const Placement& wanted,
                                              int* budget, int* shipped);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SOLVER_MIGRATION_H_
