#include "planner/placement/holder_choice.h"

#include <algorithm>
#include <tuple>

namespace semmoe::planner {

HolderChoice ChooseHolders(const Placement& placement, int layer,
                           absl::Span<const int32_t> demand) {
  const int g = placement.num_devices(), n = placement.num_experts();
  HolderChoice c;
  c.num_experts_ = n;
  c.load_.assign(g, 0);
  c.offset_.assign(static_cast<size_t>(g) * n + 1, 0);
  for (int r = 0; r < g; ++r) {
    for (int e = 0; e < n; ++e) {
      const size_t i = static_cast<size_t>(r) * n + e;
      c.offset_[i + 1] = c.offset_[i] + static_cast<int64_t>(placement.HoldersOf(layer, e).size());
    }
  }
  c.counts_.assign(c.offset_.back(), 0);
  struct Piece {
    int32_t count;
    int rank, expert;
  };
  std::vector<Piece> pieces;
  for (int r = 0; r < g; ++r) {
    for (int e = 0; e < n; ++e) {
      const int32_t d = demand[static_cast<size_t>(r) * n + e];
      if (d == 0) continue;
      const std::vector<int32_t>& holders = placement.HoldersOf(layer, e);
      const size_t first = c.offset_[static_cast<size_t>(r) * n + e];
      const int fixed = placement.Holds(layer, r, e) ? r : holders.size() == 1 ? holders[0] : -1;
      if (fixed < 0) {
        pieces.push_back({d, r, e});
        continue;
      }
      const auto at = std::find(holders.begin(), holders.end(), fixed) - holders.begin();
      c.counts_[first + at] = d;
      c.load_[fixed] += d;
    }
  }
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) {
    return std::make_tuple(-a.count, a.rank, a.expert) <
           std::make_tuple(-b.count, b.rank, b.expert);
  });
  for (const Piece& p : pieces) {
    const std::vector<int32_t>& holders = placement.HoldersOf(layer, p.expert);
    int32_t* counts = c.counts_.data() + c.offset_[static_cast<size_t>(p.rank) * n + p.expert];
    for (int32_t unit = 0; unit < p.count; ++unit) {
      size_t best = 0;
      for (size_t h = 1; h < holders.size(); ++h) {
        if (c.load_[holders[h]] < c.load_[holders[best]]) best = h;
      }
      ++counts[best];
      ++c.load_[holders[best]];
    }
  }
  return c;
}

std::vector<int32_t> ExpertDemand(absl::Span<const int32_t> ids, int num_experts) {
  std::vector<int32_t> demand(num_experts, 0);
  for (int32_t e : ids) ++demand[e];
  return demand;
}

double LoadImbalance(absl::Span<const int64_t> load) {
  if (load.empty()) return 0;
  int64_t sum = 0, max = 0;
  for (int64_t l : load) {
    sum += l;
    max = std::max(max, l);
  }
  if (sum == 0) return 0;
  const double mean = static_cast<double>(sum) / static_cast<double>(load.size());
  return (static_cast<double>(max) - mean) / mean;
}

}  // namespace semmoe::planner
