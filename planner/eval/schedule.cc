#include "planner/eval/schedule.h"

#include <algorithm>
#include <cstdint>

namespace semmoe::planner {

std::vector<int> AffinityRequests(const trace::TraceSet& trace, const std::vector<float>& scores,
                                  int num_devices, double token_balance_eps) {
  const int g = num_devices;
  const size_t vocab = scores.size() / g;
  const double capacity = (1.0 + token_balance_eps) * trace.num_tokens() / g;
  std::vector<int64_t> load(g, 0);
  std::vector<double> s(g);
  std::vector<int> devices(trace.num_requests());
  for (int r = 0; r < trace.num_requests(); ++r) {
    std::fill(s.begin(), s.end(), 0.0);
    const int64_t begin = trace.request_begin[r], end = trace.request_begin[r + 1];
    for (int64_t t = begin; t < end; ++t) {
      if (trace.tokens[t] >= vocab) continue;
      const float* row = &scores[static_cast<size_t>(trace.tokens[t]) * g];
      for (int d = 0; d < g; ++d) s[d] += row[d];
    }
    int best = -1;
    for (int d = 0; d < g; ++d) {
      if (load[d] + (end - begin) > capacity) continue;
      if (best < 0 || s[d] > s[best]) best = d;
    }
    if (best < 0) best = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    devices[r] = best;
    load[best] += end - begin;
  }
  return devices;
}

}  // namespace semmoe::planner
