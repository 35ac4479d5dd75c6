#include "planner/eval/serving_rule.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "planner/placement/holder_choice.h"

namespace semmoe::planner {

absl::Status CheckPlacementFits(const trace::TraceSet& trace, const Placement& placement) {
  if (placement.num_layers() != trace.num_layers() ||
      placement.num_experts() != static_cast<int>(trace.header.num_experts)) {
    return absl::InvalidArgumentError(
        absl::StrCat("placement (", placement.num_layers(), " layers, ", placement.num_experts(),
                     " experts) does not match the trace (", trace.num_layers(), " layers, ",
                     trace.header.num_experts, " experts)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> TokenDevicesOfRequests(const trace::TraceSet& trace,
                                                        const std::vector<int>& request_device,
                                                        int num_devices) {
  if (static_cast<int>(request_device.size()) != trace.num_requests()) {
    return absl::InvalidArgumentError(absl::StrCat(request_device.size(), " request devices for ",
                                                   trace.num_requests(), " requests"));
  }
  std::vector<int> token_device(trace.num_tokens());
  for (int r = 0; r < trace.num_requests(); ++r) {
    const int d = request_device[r];
    if (d < 0 || d >= num_devices) {
      return absl::InvalidArgumentError(
          absl::StrCat("request ", r, ": device ", d, " out of range"));
    }
    std::fill(token_device.begin() + trace.request_begin[r],
              token_device.begin() + trace.request_begin[r + 1], d);
  }
  return token_device;
}

absl::Status CheckTokenDevices(const trace::TraceSet& trace,
                               const std::vector<std::vector<int>>& token_device,
                               int num_devices) {
  if (static_cast<int>(token_device.size()) != trace.num_layers()) {
    return absl::InvalidArgumentError("token_device needs one row per MoE layer");
  }
  for (const auto& row : token_device) {
    if (static_cast<int64_t>(row.size()) != trace.num_tokens()) {
      return absl::InvalidArgumentError("token_device rows need one device per token");
    }
    for (int d : row) {
      if (d < 0 || d >= num_devices) {
        return absl::InvalidArgumentError(absl::StrCat("token device ", d, " out of range"));
      }
    }
  }
  return absl::OkStatus();
}

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
