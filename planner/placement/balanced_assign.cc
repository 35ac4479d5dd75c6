#include "planner/placement/balanced_assign.h"

#include <algorithm>
#include <numeric>

namespace semmoe::planner {

std::vector<int64_t> EqualChunks(int64_t tokens, int devices) {
  std::vector<int64_t> counts(devices, tokens / devices);
  for (int d = 0; d < tokens % devices; ++d) ++counts[d];
  return counts;
}

std::vector<int64_t> ChunkCapacities(int64_t tokens, int devices, double slack) {
  std::vector<int64_t> capacity = EqualChunks(tokens, devices);
  const auto loose =
      static_cast<int64_t>((1.0 + slack) * static_cast<double>(tokens) / devices + 1e-9);
  for (int64_t& c : capacity) c = std::max(c, loose);
  return capacity;
}

std::vector<int32_t> AssignBalanced(absl::Span<const float> scores, int devices, double slack) {
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
  std::vector<int64_t> room = ChunkCapacities(tokens, devices, slack);
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
