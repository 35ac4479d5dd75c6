#include "planner/solver/replicas.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "planner/placement/holder_choice.h"
#include "planner/solver/expert_balance.h"

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

constexpr int kCandidates = 8;  // Per device and kind (local use, load per holder).

// One layer's replicas, scored by the expert-load imbalance under the engines' per-batch holder
// choice for each traffic group of the profile (see replicas.h).
class LayerChooser {
 public:
  // request_group[r]: request r's traffic group in [0, groups).
  LayerChooser(const trace::TraceSet& trace, int l, const Placement& placement,
               const std::vector<int>& token_device, const std::vector<int>& request_group,
               int groups)
      : g_(placement.num_devices()), n_(placement.num_experts()), holders_(n_) {
    for (int e = 0; e < n_; ++e) holders_[e] = {placement.Device(l, e)};
    use_.assign(static_cast<size_t>(g_) * n_, 0);
    // One demand per group, and the profile's own mix last.
    demand_.assign(groups + 1, std::vector<int32_t>(static_cast<size_t>(g_) * n_, 0));
    const int k = trace.top_k();
    for (int r = 0; r < trace.num_requests(); ++r) {
      std::vector<int32_t>& demand = demand_[request_group[r]];  // Not the last: groups < size.
      for (int64_t t = trace.request_begin[r]; t < trace.request_begin[r + 1]; ++t) {
        const int d = token_device[t];
        for (int j = 0; j < k; ++j) {
          const int e = trace.Experts(t, l)[j];
          ++demand[d * n_ + e];
          ++demand_.back()[d * n_ + e];
          ++use_[d * n_ + e];
        }
      }
    }
  }

  // R rounds: in each, the devices in order of load (lightest first) each take the candidate
  // that leaves the summed imbalance of the traffic groups lowest (ties: the most local
  // activations).
  std::vector<std::vector<int32_t>> Choose(int replicas) {
    std::vector<std::vector<int32_t>> chosen(g_);
    for (int round = 0; round < replicas; ++round) {
      const std::vector<double> load = Loads();
      std::vector<int> order(g_);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return load[a] < load[b]; });
      for (int d : order) {
        const std::vector<int> candidates = Candidates(d);
        std::vector<double> time(candidates.size());
        for (size_t i = 0; i < candidates.size(); ++i) {
          holders_[candidates[i]].push_back(d);
          time[i] = Imbalance();
          holders_[candidates[i]].pop_back();
        }
        const double least = *std::min_element(time.begin(), time.end());
        int best = -1;
        for (size_t i = 0; i < candidates.size(); ++i) {
          const int e = candidates[i];
          if (time[i] <= least + 1e-9 && (best < 0 || use_[d * n_ + e] > use_[d * n_ + best])) {
            best = e;
          }
        }
        holders_[best].push_back(d);
        chosen[d].push_back(best);
      }
    }
    for (auto& c : chosen) std::sort(c.begin(), c.end());
    return chosen;
  }

 private:
  bool Holds(int d, int e) const {
    return std::find(holders_[e].begin(), holders_[e].end(), d) != holders_[e].end();
  }

  // The experts `d` may copy: those its tokens use most that it lacks (locality), and those
  // with the most activations per holder (hot, the load to spread).
  std::vector<int> Candidates(int d) const {
    std::vector<int> lacking;
    for (int e = 0; e < n_; ++e) {
      if (!Holds(d, e)) lacking.push_back(e);
    }
    std::vector<int64_t> total(n_, 0);
    for (int q = 0; q < g_; ++q) {
      for (int e = 0; e < n_; ++e) total[e] += use_[q * n_ + e];
    }
    std::vector<int> out;
    auto add_top = [&](auto key) {
      std::vector<int> by = lacking;
      std::stable_sort(by.begin(), by.end(), [&](int a, int b) { return key(a) > key(b); });
      for (int i = 0; i < std::min<int>(kCandidates, by.size()); ++i) {
        if (std::find(out.begin(), out.end(), by[i]) == out.end()) out.push_back(by[i]);
      }
    };
    add_top([&](int e) { return static_cast<double>(use_[d * n_ + e]); });
    add_top([&](int e) { return static_cast<double>(total[e]) / holders_[e].size(); });
    return out;
  }

  // Per device, activations served of the whole profile under the holder choice.
  std::vector<double> Loads() const {
    const HolderChoice c = ChooseHolders(holders_, g_, demand_.back());
    return std::vector<double>(c.load().begin(), c.load().end());
  }

  // Σ over the traffic groups and the whole profile of the busiest device's load over the mean
  // under the holder choice: each group's traffic and their mix weigh the same.
  double Imbalance() const {
    double sum = 0;
    for (const std::vector<int32_t>& demand : demand_) {
      const HolderChoice c = ChooseHolders(holders_, g_, demand);
      const int64_t total = std::accumulate(c.load().begin(), c.load().end(), int64_t{0});
      if (total == 0) continue;
      const int64_t busiest = *std::max_element(c.load().begin(), c.load().end());
      sum += static_cast<double>(busiest) * g_ / static_cast<double>(total);
    }
    return sum;
  }

  const int g_, n_;
  std::vector<std::vector<int32_t>> holders_;  // [expert] → home, then replicas.
  std::vector<std::vector<int32_t>> demand_;   // [group, then all][device · N + expert].
  std::vector<int64_t> use_;                   // [device · N + expert], all groups.
};

}  // namespace

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
  // Traffic groups: requests of similar expert use (the mix unseen traffic may shift between).
  std::vector<int> groups = UsageClusters(trace, kTrafficGroups, /*seed=*/0);
  for (int l = 0; l < trace.num_layers(); ++l) {
    if (static_cast<int64_t>(token_device[l].size()) != trace.num_tokens()) {
      return absl::InvalidArgumentError("the schedule does not match the trace's tokens");
    }
    for (int d : token_device[l]) {
      if (d < 0 || d >= g) return absl::InvalidArgumentError("a scheduled device is out of range");
    }
    chosen[l] =
        LayerChooser(trace, l, placement, token_device[l], groups, kTrafficGroups).Choose(replicas);
  }
  return placement.WithReplicas(std::move(chosen));
}

}  // namespace semmoe::planner
