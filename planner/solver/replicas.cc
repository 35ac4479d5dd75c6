#include "planner/solver/replicas.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "planner/placement/holder_choice.h"

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

// One layer's replicas, scored by the MoE time model under the engines' per-batch holder choice
// over folds of the profile (see replicas.h).
class LayerChooser {
 public:
  LayerChooser(const trace::TraceSet& trace, int l, const Placement& placement,
               const std::vector<int>& token_device, int folds, double link_cost)
      : g_(placement.num_devices()), n_(placement.num_experts()), holders_(n_) {
    for (int e = 0; e < n_; ++e) holders_[e] = {placement.Device(l, e)};
    demand_.assign(folds, std::vector<int32_t>(static_cast<size_t>(g_) * n_, 0));
    use_.assign(static_cast<size_t>(g_) * n_, 0);
    // Exchanged rows per remote activation under the homes: a token sends one row to a device
    // however many of its experts that device serves. The model counts activations, scaled.
    int64_t remote = 0, rows = 0;
    std::vector<int64_t> seen(g_, -1);
    const int k = trace.top_k();
    for (int r = 0; r < trace.num_requests(); ++r) {
      // Folds are consecutive stretches of the trace: traffic as it arrives.
      std::vector<int32_t>& demand =
          demand_[static_cast<int64_t>(r) * folds / trace.num_requests()];
      for (int64_t t = trace.request_begin[r]; t < trace.request_begin[r + 1]; ++t) {
        const int d = token_device[t];
        for (int j = 0; j < k; ++j) {
          const int e = trace.Experts(t, l)[j];
          ++demand[d * n_ + e];
          ++use_[d * n_ + e];
          const int home = placement.Device(l, e);
          if (home == d) continue;
          ++remote;
          if (seen[home] != t) seen[home] = t, ++rows;
        }
      }
    }
    link_cost_ = link_cost * (remote == 0 ? 1.0 : static_cast<double>(rows) / remote);
  }

  // R rounds: in each, the devices in order of modelled load (lightest first) each take the
  // candidate that leaves the summed per-fold time lowest (ties: the most local activations).
  std::vector<std::vector<int32_t>> Choose(int replicas) {
    std::vector<std::vector<int32_t>> chosen(g_);
    for (int round = 0; round < replicas; ++round) {
      const std::vector<double> load = Loads();
      std::vector<int> order(g_);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return load[a] < load[b]; });
      for (int d : order) {
        int best = -1;
        double best_time = 0;
        for (int e : Candidates(d)) {
          holders_[e].push_back(d);
          const double time = Time();
          holders_[e].pop_back();
          if (best < 0 || time < best_time - 1e-9 ||
              (time < best_time + 1e-9 && use_[d * n_ + e] > use_[d * n_ + best])) {
            best = e, best_time = time;
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

  // Per device, activations served summed over the folds under the holder choice.
  std::vector<double> Loads() const {
    std::vector<double> load(g_, 0.0);
    for (const std::vector<int32_t>& demand : demand_) {
      const HolderChoice c = ChooseHolders(holders_, g_, demand);
      for (int d = 0; d < g_; ++d) load[d] += static_cast<double>(c.load()[d]);
    }
    return load;
  }

  // Σ over folds of max over devices (activations served + link cost × activations sent and
  // received): the fold's MoE-layer time in expert rows, waiting for its slowest device.
  double Time() const {
    double sum = 0;
    for (const std::vector<int32_t>& demand : demand_) {
      const HolderChoice c = ChooseHolders(holders_, g_, demand);
      std::vector<double> exchanged(g_, 0.0);
      for (int d = 0; d < g_; ++d) exchanged[d] = static_cast<double>(c.load()[d]);
      for (int d = 0; d < g_; ++d) {
        for (int e = 0; e < n_; ++e) {
          const int32_t a = demand[d * n_ + e];
          if (a == 0) continue;
          // Own activations served locally are no traffic; the rest is sent by d, received by
          // whoever serves it (its load minus its own, counted below).
          if (Holds(d, e)) {
            exchanged[d] -= a;
          } else {
            exchanged[d] += a;
          }
        }
      }
      double worst = 0;
      for (int d = 0; d < g_; ++d) {
        worst = std::max(worst, static_cast<double>(c.load()[d]) + link_cost_ * exchanged[d]);
      }
      sum += worst;
    }
    return sum;
  }

  const int g_, n_;
  std::vector<std::vector<int32_t>> holders_;  // [expert] → home, then replicas.
  std::vector<std::vector<int32_t>> demand_;   // [fold][device · N + expert].
  std::vector<int64_t> use_;                   // [device · N + expert], all folds.
  double link_cost_ = 0;
};

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
    chosen[l] = LayerChooser(trace, l, placement, token_device[l],
                             std::clamp(trace.num_requests() / kRequestsPerFold, 1, kFolds),
                             link_cost)
                    .Choose(replicas);
  }
  return placement.WithReplicas(std::move(chosen));
}

}  // namespace semmoe::planner
