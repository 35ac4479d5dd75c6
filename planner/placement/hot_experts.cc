#include "planner/placement/hot_experts.h"

#include <algorithm>

namespace semmoe::planner {

std::vector<HotExpert> HottestExperts(absl::Span<const int64_t> activations, int k) {
  std::vector<HotExpert> all;
  for (size_t e = 0; e < activations.size(); ++e) {
    if (activations[e] > 0) all.push_back({static_cast<int>(e), activations[e]});
  }
  const size_t keep = std::min(all.size(), static_cast<size_t>(std::max(k, 0)));
  std::partial_sort(all.begin(), all.begin() + keep, all.end(),
                    [](const HotExpert& a, const HotExpert& b) {
                      return a.activations != b.activations ? a.activations > b.activations
                                                            : a.expert < b.expert;
                    });
  all.resize(keep);
  return all;
}

void AddActivations(absl::Span<const int64_t> more, std::vector<int64_t>& sum) {
  if (sum.size() < more.size()) sum.resize(more.size(), 0);
  for (size_t e = 0; e < more.size(); ++e) sum[e] += more[e];
}

}  // namespace semmoe::planner
