#include "planner/solver/replicas.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace semmoe::planner {

std::vector<std::vector<int>> TokensOfRequests(const trace::TraceSet& trace,
                                               const std::vector<int>& request_device) {
  std::vector<int> per_token(trace.num_tokens());
  for (int r = 0; r < trace.num_requests(); ++r) {
    for (int64_t t = trace.request_begin[r]; t < trace.request_begin[r + 1]; ++t) {
      per_token[t] = request_device[r];
    }
  }
  return std::vector<std::vector<int>>(trace.num_layers(), per_token);
}

absl::StatusOr<Placement> AddHotReplicas(const trace::TraceSet& trace, const Placement& placement,
                                         const std::vector<std::vector<int>>& token_device,
                                         int replicas) {
  const int n = placement.num_experts(), g = placement.num_devices();
  if (replicas < 0 || replicas > n - n / g) {
    return absl::InvalidArgumentError(
        absl::StrCat("--replicas ", replicas, " is not in [0, ", n - n / g, "]"));
  }
  if (static_cast<int>(token_device.size()) != trace.num_layers() ||
      placement.num_layers() != trace.num_layers()) {
    return absl::InvalidArgumentError("the schedule does not match the trace's layers");
  }
  std::vector<std::vector<std::vector<int32_t>>> chosen(trace.num_layers());
  std::vector<int64_t> uses(static_cast<size_t>(g) * n);
  for (int l = 0; l < trace.num_layers(); ++l) {
    if (static_cast<int64_t>(token_device[l].size()) != trace.num_tokens()) {
      return absl::InvalidArgumentError("the schedule does not match the trace's tokens");
    }
    std::fill(uses.begin(), uses.end(), 0);
    for (int64_t t = 0; t < trace.num_tokens(); ++t) {
      const int d = token_device[l][t];
      if (d < 0 || d >= g) return absl::InvalidArgumentError("a scheduled device is out of range");
      for (int j = 0; j < trace.top_k(); ++j)
        ++uses[static_cast<size_t>(d) * n + trace.Experts(t, l)[j]];
    }
    chosen[l].resize(g);
    for (int d = 0; d < g; ++d) {
      std::vector<int> candidates;
      for (int e = 0; e < n; ++e) {
        if (placement.Device(l, e) != d) candidates.push_back(e);
      }
      // Most used first; ties to the lower id (deterministic).
      std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
        return uses[static_cast<size_t>(d) * n + a] > uses[static_cast<size_t>(d) * n + b];
      });
      chosen[l][d].assign(candidates.begin(), candidates.begin() + replicas);
    }
  }
  return placement.WithReplicas(std::move(chosen));
}

}  // namespace semmoe::planner
