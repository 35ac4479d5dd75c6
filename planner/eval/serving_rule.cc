#include "planner/eval/serving_rule.h"

#include <algorithm>
#include <utility>

#include "planner/placement/holder_choice.h"

namespace semmoe::planner {

ServingRule::ServingRule(const trace::TraceSet& trace, const Placement& placement,
                         std::function<int(int, int64_t)> device_of_token, int64_t window)
    : trace_(trace),
      placement_(placement),
      device_of_token_(std::move(device_of_token)),
      window_(placement.replicas_per_device() > 0 ? window : 0) {}

void ServingRule::BeginToken(int layer, int64_t t) {
  if (window_ <= 0 || t % window_ != 0) return;
  const int g = placement_.num_devices(), n = placement_.num_experts(), k = trace_.top_k();
  const int64_t end = std::min(trace_.num_tokens(), t + window_);
  demand_.assign(static_cast<size_t>(g) * n, 0);
  for (int64_t u = t; u < end; ++u) {
    const uint16_t* experts = trace_.Experts(u, layer);
    for (int j = 0; j < k; ++j) ++demand_[device_of_token_(layer, u) * n + experts[j]];
  }
  const HolderChoice choice = ChooseHolders(placement_, layer, demand_);
  left_.assign(static_cast<size_t>(g) * n, {});
  for (int d = 0; d < g; ++d) {
    for (int e = 0; e < n; ++e) {
      left_[d * n + e].assign(choice.Shares(d, e).begin(), choice.Shares(d, e).end());
    }
  }
}

int ServingRule::Serve(int layer, int expert, int home) {
  if (window_ == 0 || placement_.Holds(layer, home, expert)) {
    return placement_.Serving(layer, expert, home);  // A local replica, else home.
  }
  std::vector<int32_t>& shares = left_[home * placement_.num_experts() + expert];
  for (size_t h = 0; h < shares.size(); ++h) {
    if (shares[h] > 0) {
      --shares[h];
      return static_cast<int>(placement_.HoldersOf(layer, expert)[h]);
    }
  }
  return placement_.Device(layer, expert);
}

}  // namespace semmoe::planner
