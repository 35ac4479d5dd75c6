#include "planner/placement/holder_choice.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

namespace semmoe::planner {

namespace {

// Adds `count` units to the loads of `holders` (devices) as if each went to the least-loaded
// holder, ties to the earlier one; counts[h] += the units holder h got. In O(H²), not O(count):
// the lowest holders are raised together to a common level, and the units too few for another
// level go one each to the earliest holders at it.
void WaterFill(const std::vector<int32_t>& holders, int64_t count, std::vector<int64_t>& load,
               int32_t* counts) {
  const int h_count = static_cast<int>(holders.size());
  std::vector<int> order(h_count);
  for (int h = 0; h < h_count; ++h) order[h] = h;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return std::make_pair(load[holders[a]], a) < std::make_pair(load[holders[b]], b);
  });
  int64_t level = load[holders[order[0]]], left = count;
  int m = 0;  // order[0, m) are at `level`.
  while (true) {
    while (m < h_count && load[holders[order[m]]] == level) ++m;
    const int64_t raise =
        m < h_count ? std::min(load[holders[order[m]]] - level, left / m) : left / m;
    level += raise;
    left -= raise * m;
    if (m < h_count && level == load[holders[order[m]]]) continue;
    break;
  }
  std::vector<int> at_level(order.begin(), order.begin() + m);
  std::sort(at_level.begin(), at_level.end());  // The remainder in holder order.
  for (int i = 0; i < m; ++i) {
    const int h = at_level[i];
    const int64_t got = level - load[holders[h]] + (i < left ? 1 : 0);
    counts[h] += static_cast<int32_t>(got);
    load[holders[h]] += got;
  }
}

}  // namespace

HolderChoice ChooseHolders(const Placement& placement, int layer,
                           absl::Span<const int32_t> demand) {
  return HolderChoice::Choose(
      [&](int e) -> const std::vector<int32_t>& { return placement.HoldersOf(layer, e); },
      placement.num_devices(), placement.num_experts(), demand);
}

HolderChoice ChooseHolders(absl::Span<const std::vector<int32_t>> holders_of, int devices,
                           absl::Span<const int32_t> demand) {
  return HolderChoice::Choose(
      [&](int e) -> const std::vector<int32_t>& { return holders_of[e]; }, devices,
      static_cast<int>(holders_of.size()), demand);
}

template <typename HoldersOf>
HolderChoice HolderChoice::Choose(const HoldersOf& holders_of, int devices, int experts,
                                  absl::Span<const int32_t> demand) {
  const int g = devices, n = experts;
  HolderChoice c;
  c.num_experts_ = n;
  c.load_.assign(g, 0);
  c.offset_.assign(static_cast<size_t>(g) * n + 1, 0);
  for (int r = 0; r < g; ++r) {
    for (int e = 0; e < n; ++e) {
      const size_t i = static_cast<size_t>(r) * n + e;
      c.offset_[i + 1] = c.offset_[i] + static_cast<int64_t>(holders_of(e).size());
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
      const std::vector<int32_t>& holders = holders_of(e);
      const size_t first = c.offset_[static_cast<size_t>(r) * n + e];
      const bool holds = std::find(holders.begin(), holders.end(), r) != holders.end();
      const int fixed = holds ? r : holders.size() == 1 ? holders[0] : -1;
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
    const std::vector<int32_t>& holders = holders_of(p.expert);
    int32_t* counts = c.counts_.data() + c.offset_[static_cast<size_t>(p.rank) * n + p.expert];
    WaterFill(holders, p.count, c.load_, counts);
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
