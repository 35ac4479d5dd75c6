// Per-batch holder choice: when an expert has several holders (its home and replicas), the
// activations of the ranks that do not hold it are spread over its holders by load, so that no
// rank serves far more expert rows than the others. A rank that holds an expert serves its own
// tokens' activations of it (locality first: the LAR is that of the placement). Every rank
// computes the same choice from the same demand — each rank's activations per expert in the batch,
// which the ranks exchange — so their dispatch plans agree (engine/parallel/dispatch_plan.h).
//
// The rule, deterministic: each device starts with the activations it serves for its own tokens
// and those of experts with one holder that other ranks send it; then the pieces with a choice
// (a rank's activations of an expert it does not hold but several devices do), largest first
// (ties: lower rank, then lower expert), each go one activation at a time to the least-loaded of
// the expert's holders (ties: HoldersOf order, home first) — computed by water-filling, in time
// independent of the counts (O(devices × experts + pieces × holders²) a layer).
#ifndef SEMMOE_PLANNER_PLACEMENT_HOLDER_CHOICE_H_
#define SEMMOE_PLANNER_PLACEMENT_HOLDER_CHOICE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "planner/placement/placement.h"

namespace semmoe::planner {

class HolderChoice {
 public:
  // How many of `rank`'s activations of `expert` go to each of the expert's holders, in
  // Placement::HoldersOf order. All of them to the rank itself when it holds the expert.
  absl::Span<const int32_t> Shares(int rank, int expert) const {
    const size_t i = static_cast<size_t>(rank) * num_experts_ + expert;
    return absl::MakeConstSpan(counts_.data() + offset_[i], offset_[i + 1] - offset_[i]);
  }
  // Expert activations each device serves under this choice. [devices]
  const std::vector<int64_t>& load() const { return load_; }

 private:
  friend HolderChoice ChooseHolders(const Placement&, int, absl::Span<const int32_t>);
  friend HolderChoice ChooseHolders(absl::Span<const std::vector<int32_t>>, int,
                                    absl::Span<const int32_t>);
  // Both: holders_of(e) gives expert e's holders (defined and instantiated in the .cc only).
  template <typename HoldersOf>
  static HolderChoice Choose(const HoldersOf& holders_of, int devices, int experts,
                             absl::Span<const int32_t> demand);
  int num_experts_ = 0;
  std::vector<int64_t> offset_;  // [devices × experts + 1] into counts_.
  std::vector<int32_t> counts_;
  std::vector<int64_t> load_;
};

// `demand` [devices × experts]: each rank's activations of each expert in the batch (≥ 0).
// REQUIRES: 0 <= layer < placement.num_layers(), demand.size() == devices × experts.
HolderChoice ChooseHolders(const Placement& placement, int layer, absl::Span<const int32_t> demand);

// The same over explicit holders, for planners that try replicas before they make a Placement:
// holders_of[e], the devices holding expert e (its home first, then its replicas).
// REQUIRES: every holder in [0, devices), demand.size() == devices × holders_of.size().
HolderChoice ChooseHolders(absl::Span<const std::vector<int32_t>> holders_of, int devices,
                           absl::Span<const int32_t> demand);

// One rank's row of the demand: its tokens' activations per expert (`ids`: the router's top-k,
// each in [0, num_experts)).
std::vector<int32_t> ExpertDemand(absl::Span<const int32_t> ids, int num_experts);

// The load imbalance of `load` (expert activations per device): (max − mean) / mean, the metric
// TensorRT-LLM reports; 0 when nothing is served.
double LoadImbalance(absl::Span<const int64_t> load);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_PLACEMENT_HOLDER_CHOICE_H_
