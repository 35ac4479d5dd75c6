#include "planner/placement/balanced_assign.h"

#include <algorithm>
#include <numeric>

namespace semmoe::planner {

std::vector<int64_t> EqualChunks(int64_t tokens, int devices) {
  std::vector<int64_t> counts(devices, tokens / devices);
  for (int d = 0; d < tokens % devices; ++d) ++counts[d];
  return counts;
}

std::vector<int32_t> AssignBalanced(absl::Span<const float> scores, int devices) {
  const int64_t tokens = static_cast<int64_t>(scores.size()) / devices;
  std::vector<float> best(tokens);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = scores.data() + t * devices;
    best[t] = *std::max_element(row, row + devices);
  }
  std::vector<int32_t> order(tokens);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return best[a] > best[b]; });
  std::vector<int64_t> room = EqualChunks(tokens, devices);
  std::vector<int32_t> device(tokens);
  for (int32_t t : order) {
    const float* row = scores.data() + static_cast<int64_t>(t) * devices;
    int chosen = -1;
    for (int d = 0; d < devices; ++d) {
      if (room[d] == 0) continue;
      if (chosen < 0 || row[d] > row[chosen] || (row[d] == row[chosen] && room[d] > room[chosen])) {
        chosen = d;
      }
    }
    device[t] = chosen;
    --room[chosen];
  }
  return device;
}

}  // namespace semmoe::planner
