#include "planner/sim/replay.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "planner/eval/serving_rule.h"

namespace semmoe::planner::sim {
namespace {

absl::StatusOr<Replay> Run(const trace::TraceSet& trace, const Placement& placement,
                           const std::function<int(int, int64_t)>& device_of_token,
                           int64_t window) {
  const int g = placement.num_devices();
  if (g > 255) {
    return absl::InvalidArgumentError(
        absl::StrCat("the scale model takes up to 255 devices, not ", g));
  }
  RETURN_IF_ERROR(CheckPlacementFits(trace, placement));
  Replay r;
  r.placement = std::make_shared<const Placement>(placement);
  r.rank_dependent = placement.replicas_per_device() > 0;
  r.devices = g;
  r.layers = trace.num_layers();
  r.top_k = trace.top_k();
  r.num_experts = placement.num_experts();
  r.tokens = trace.num_tokens();
  r.token_device.resize(static_cast<size_t>(r.layers) * r.tokens);
  r.served.resize(static_cast<size_t>(r.tokens) * r.layers * r.top_k);
  ServingRule rule(trace, placement, device_of_token, window);
  for (int l = 0; l < r.layers; ++l) {
    for (int64_t t = 0; t < r.tokens; ++t) {
      rule.BeginToken(l, t);
      const int home = device_of_token(l, t);
      r.token_device[l * r.tokens + t] = static_cast<uint8_t>(home);
      const uint16_t* experts = trace.Experts(t, l);
      uint8_t* out = r.served.data() + (t * r.layers + l) * r.top_k;
      for (int j = 0; j < r.top_k; ++j) {
        out[j] = static_cast<uint8_t>(rule.Serve(l, experts[j], home));
      }
    }
  }
  return r;
}

}  // namespace

absl::StatusOr<Replay> ReplayDp(const trace::TraceSet& trace, const Placement& placement,
                                const std::vector<int>& request_device, int64_t window) {
  ASSIGN_OR_RETURN(const std::vector<int> device,
                   TokenDevicesOfRequests(trace, request_device, placement.num_devices()));
  return Run(
      trace, placement, [&](int, int64_t t) { return device[t]; }, window);
}

absl::StatusOr<Replay> ReplayTp(const trace::TraceSet& trace, const Placement& placement,
                                const std::vector<std::vector<int>>& token_device, int64_t window) {
  RETURN_IF_ERROR(CheckTokenDevices(trace, token_device, placement.num_devices()));
  return Run(
      trace, placement, [&](int l, int64_t t) { return token_device[l][t]; }, window);
}

}  // namespace semmoe::planner::sim
