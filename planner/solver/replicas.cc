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

namespace {

// One layer's greedy choice: R rounds; in each, every device in turn takes the replica that
// leaves the layer's modelled time (max over devices of expert rows + link_cost × exchanged
// rows) lowest, ties to the one that saves most rows; candidates are the `kCandidates` experts
// its tokens use most among those it does not serve locally yet.
constexpr int kCandidates = 8;

std::vector<std::vector<int32_t>> ChooseForLayer(const trace::TraceSet& trace, int l,
                                                 const Placement& placement,
                                                 const std::vector<int>& token_device,
                                                 int replicas, double link_cost) {
  const int n = placement.num_experts(), g = placement.num_devices(), k = trace.top_k();
  std::vector<std::vector<int32_t>> chosen(g);
  std::vector<std::vector<int64_t>> tokens_on(g);
  for (int64_t t = 0; t < trace.num_tokens(); ++t) tokens_on[token_device[t]].push_back(t);
  // Which device serves expert e for a token on d: a replica on d, else its home.
  auto serving = [&](int e, int d) {
    for (int32_t r : chosen[d]) {
      if (r == e) return d;
    }
    return placement.Device(l, e);
  };
  std::vector<double> rows(g, 0.0), exchanged(g, 0.0);
  std::vector<int64_t> seen(g, -1);
  for (int64_t t = 0; t < trace.num_tokens(); ++t) {
    const int home = token_device[t];
    for (int j = 0; j < k; ++j) {
      const int s = placement.Device(l, trace.Experts(t, l)[j]);
      rows[s] += 1;
      if (s != home && seen[s] != t) seen[s] = t, exchanged[home] += 1, exchanged[s] += 1;
    }
  }
  std::vector<int64_t> uses(n);
  for (int round = 0; round < replicas; ++round) {
    for (int d = 0; d < g; ++d) {
      std::fill(uses.begin(), uses.end(), 0);
      for (int64_t t : tokens_on[d]) {
        for (int j = 0; j < k; ++j) ++uses[trace.Experts(t, l)[j]];
      }
      std::vector<int> candidates;
      for (int e = 0; e < n; ++e) {
        if (serving(e, d) != d && uses[e] > 0) candidates.push_back(e);
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int a, int b) { return uses[a] > uses[b]; });
      if (candidates.size() > kCandidates) candidates.resize(kCandidates);
      if (candidates.empty()) {  // Nothing its tokens use remotely: any expert not held.
        for (int e = 0; e < n && candidates.empty(); ++e) {
          if (serving(e, d) != d) candidates.push_back(e);
        }
      }
      int best = -1;
      double best_time = 0, best_saved = 0;
      std::vector<double> best_rows, best_exchanged;
      for (int e : candidates) {
        std::vector<double> r = rows, x = exchanged;
        const int from = serving(e, d);
        double saved = 0;
        for (int64_t t : tokens_on[d]) {
          bool uses_e = false, other_on_from = false;
          for (int j = 0; j < k; ++j) {
            const int a = trace.Experts(t, l)[j];
            if (a == e) {
              uses_e = true;
            } else if (serving(a, d) == from) {
              other_on_from = true;
            }
          }
          if (!uses_e) continue;
          r[from] -= 1, r[d] += 1;
          if (!other_on_from) x[d] -= 1, x[from] -= 1, saved += 2;
        }
        double time = 0;
        for (int q = 0; q < g; ++q) time = std::max(time, r[q] + link_cost * x[q]);
        if (best < 0 || time < best_time - 1e-9 ||
            (time < best_time + 1e-9 && saved > best_saved)) {
          best = e, best_time = time, best_saved = saved;
          best_rows = std::move(r), best_exchanged = std::move(x);
        }
      }
      chosen[d].push_back(best);
      rows = std::move(best_rows), exchanged = std::move(best_exchanged);
    }
  }
  return chosen;
}

}  // namespace

absl::StatusOr<Placement> AddHotReplicas(const trace::TraceSet& trace, const Placement& placement,
                                         const std::vector<std::vector<int>>& token_device,
                                         int replicas, double link_cost) {
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
  for (int l = 0; l < trace.num_layers(); ++l) {
    if (static_cast<int64_t>(token_device[l].size()) != trace.num_tokens()) {
      return absl::InvalidArgumentError("the schedule does not match the trace's tokens");
    }
    for (int d : token_device[l]) {
      if (d < 0 || d >= g) return absl::InvalidArgumentError("a scheduled device is out of range");
    }
    chosen[l] = ChooseForLayer(trace, l, placement, token_device[l], replicas, link_cost);
  }
  return placement.WithReplicas(std::move(chosen));
}

}  // namespace semmoe::planner
