#include "planner/solver/baselines.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace semmoe::planner {
namespace {

using trace::TraceSet;

absl::Status CheckDevices(const TraceSet& trace, int g) {
  const int n = static_cast<int>(trace.header.num_experts);
  if (g <= 0 || n % g != 0) {
    return absl::InvalidArgumentError(absl::StrCat(g, " devices do not divide ", n, " experts"));
  }
  return absl::OkStatus();
}

std::vector<int> MoeLayers(const TraceSet& trace) {
  return std::vector<int>(trace.header.moe_layers.begin(), trace.header.moe_layers.end());
}

}  // namespace

absl::StatusOr<Placement> EplbPlacement(const TraceSet& trace, int g) {
  if (absl::Status s = CheckDevices(trace, g); !s.ok()) return s;
  const int n = static_cast<int>(trace.header.num_experts), per = n / g;
  std::vector<std::vector<int32_t>> device_of(trace.num_layers(), std::vector<int32_t>(n));
  for (int l = 0; l < trace.num_layers(); ++l) {
    std::vector<int64_t> load(n, 0);
    for (int64_t t = 0; t < trace.num_tokens(); ++t) {
      for (int j = 0; j < trace.top_k(); ++j) ++load[trace.Experts(t, l)[j]];
    }
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return load[a] > load[b]; });
    std::vector<int64_t> device_load(g, 0);
    std::vector<int> slots(g, per);
    for (int e : order) {
      int best = -1;
      for (int d = 0; d < g; ++d) {
        if (slots[d] > 0 && (best < 0 || device_load[d] < device_load[best])) best = d;
      }
      device_of[l][e] = best;
      device_load[best] += load[e];
      --slots[best];
    }
  }
  return Placement::FromAssignment(MoeLayers(trace), n, g, std::move(device_of));
}

absl::StatusOr<Placement> EplbHierarchicalPlacement(const TraceSet& trace,
                                                    const Topology& topology) {
  const int g = topology.num_ranks();
  if (absl::Status s = CheckDevices(trace, g); !s.ok()) return s;
  const int n = static_cast<int>(trace.header.num_experts), per = n / g;
  const int nodes = topology.num_nodes();
  std::vector<std::vector<int32_t>> device_of(trace.num_layers(), std::vector<int32_t>(n));
  // Greedy packing of `items` (by decreasing load) into bins with `slots` each, least-loaded
  // bin with a free slot first (ties: the lower bin).
  auto pack = [](const std::vector<int>& items, const std::vector<int64_t>& load,
                 std::vector<int> slots) {
    std::vector<int> order = items, bin_of(items.size());
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return load[a] > load[b]; });
    std::vector<int64_t> bin_load(slots.size(), 0);
    std::vector<std::pair<int, int>> placed;  // (item, bin)
    for (int e : order) {
      int best = -1;
      for (size_t b = 0; b < slots.size(); ++b) {
        if (slots[b] > 0 && (best < 0 || bin_load[b] < bin_load[best])) best = static_cast<int>(b);
      }
      placed.push_back({e, best});
      bin_load[best] += load[e];
      --slots[best];
    }
    return placed;
  };
  for (int l = 0; l < trace.num_layers(); ++l) {
    std::vector<int64_t> load(n, 0);
    for (int64_t t = 0; t < trace.num_tokens(); ++t) {
      for (int j = 0; j < trace.top_k(); ++j) ++load[trace.Experts(t, l)[j]];
    }
    std::vector<int> all(n);
    std::iota(all.begin(), all.end(), 0);
    std::vector<int> node_slots(nodes);
    for (int v = 0; v < nodes; ++v) {
      node_slots[v] = per * static_cast<int>(topology.RanksOn(v).size());
    }
    std::vector<std::vector<int>> on_node(nodes);
    for (auto [e, v] : pack(all, load, node_slots)) on_node[v].push_back(e);
    for (int v = 0; v < nodes; ++v) {
      const std::vector<int>& ranks = topology.RanksOn(v);
      for (auto [e, r] : pack(on_node[v], load, std::vector<int>(ranks.size(), per))) {
        device_of[l][e] = ranks[r];
      }
    }
  }
  return Placement::FromAssignment(MoeLayers(trace), n, g, std::move(device_of));
}

absl::StatusOr<Placement> EplbReplicas(const TraceSet& trace, const Placement& placement,
                                       int replicas) {
  const int n = placement.num_experts(), g = placement.num_devices();
  if (replicas < 0 || replicas > n - n / g) {
    return absl::InvalidArgumentError(
        absl::StrCat("--replicas ", replicas, " is not in [0, ", n - n / g, "]"));
  }
  if (placement.num_layers() != trace.num_layers() ||
      n != static_cast<int>(trace.header.num_experts)) {
    return absl::InvalidArgumentError("the placement does not match the trace");
  }
  std::vector<std::vector<std::vector<int32_t>>> chosen(trace.num_layers(),
                                                        std::vector<std::vector<int32_t>>(g));
  for (int l = 0; l < trace.num_layers(); ++l) {
    std::vector<double> load(n, 0), device_load(g, 0);
    for (int64_t t = 0; t < trace.num_tokens(); ++t) {
      for (int j = 0; j < trace.top_k(); ++j) ++load[trace.Experts(t, l)[j]];
    }
    std::vector<int> copies(n, 1), slots(g, replicas);
    std::vector<std::vector<bool>> holds(g, std::vector<bool>(n, false));
    for (int e = 0; e < n; ++e) {
      device_load[placement.Device(l, e)] += load[e];
      holds[placement.Device(l, e)][e] = true;
    }
    for (int copy = 0; copy < replicas * g; ++copy) {
      int best_e = -1, best_d = -1;
      for (int e = 0; e < n; ++e) {
        if (best_e >= 0 && load[e] / copies[e] <= load[best_e] / copies[best_e]) continue;
        int d_for_e = -1;
        for (int d = 0; d < g; ++d) {
          if (slots[d] > 0 && !holds[d][e] &&
              (d_for_e < 0 || device_load[d] < device_load[d_for_e])) {
            d_for_e = d;
          }
        }
        if (d_for_e >= 0) best_e = e, best_d = d_for_e;
      }
      // A slot is always left for some expert: R ≤ N − N/G.
      const double before = load[best_e] / copies[best_e];
      const double after = load[best_e] / (copies[best_e] + 1);
      for (int d = 0; d < g; ++d) {
        if (holds[d][best_e]) device_load[d] -= before - after;
      }
      device_load[best_d] += after;
      holds[best_d][best_e] = true;
      ++copies[best_e];
      --slots[best_d];
      chosen[l][best_d].push_back(best_e);
    }
    for (auto& device : chosen[l]) std::sort(device.begin(), device.end());
  }
  return placement.WithReplicas(std::move(chosen));
}

Coactivation CountCoactivation(const TraceSet& trace, int layer) {
  const int n = static_cast<int>(trace.header.num_experts), k = trace.top_k();
  Coactivation c{.pairs = std::vector<int64_t>(static_cast<size_t>(n) * n, 0),
                 .load = std::vector<int64_t>(n, 0)};
  for (int64_t t = 0; t < trace.num_tokens(); ++t) {
    const uint16_t* e = trace.Experts(t, layer);
    for (int a = 0; a < k; ++a) {
      ++c.load[e[a]];
      for (int b = 0; b < k; ++b) {
        if (a != b) ++c.pairs[static_cast<size_t>(e[a]) * n + e[b]];
      }
    }
  }
  return c;
}

absl::StatusOr<Placement> CoactPlacement(const TraceSet& trace, int g) {
  if (absl::Status s = CheckDevices(trace, g); !s.ok()) return s;
  const int n = static_cast<int>(trace.header.num_experts), per = n / g;
  std::vector<std::vector<int32_t>> device_of(trace.num_layers(), std::vector<int32_t>(n));
  for (int l = 0; l < trace.num_layers(); ++l) {
    const Coactivation counts = CountCoactivation(trace, l);
    const std::vector<int64_t>& w = counts.pairs;
    const std::vector<int64_t>& load = counts.load;
    // Greedy growth: each group starts at the busiest unassigned expert and takes the expert
    // most co-activated with the group so far.
    std::vector<int32_t>& dev = device_of[l];
    std::fill(dev.begin(), dev.end(), -1);
    for (int d = 0; d < g; ++d) {
      std::vector<int> group;
      int seed = -1;
      for (int e = 0; e < n; ++e) {
        if (dev[e] < 0 && (seed < 0 || load[e] > load[seed])) seed = e;
      }
      group.push_back(seed);
      dev[seed] = d;
      while (static_cast<int>(group.size()) < per) {
        int best = -1;
        int64_t best_w = -1;
        for (int e = 0; e < n; ++e) {
          if (dev[e] >= 0) continue;
          int64_t s = 0;
          for (int m : group) s += w[static_cast<size_t>(e) * n + m];
          if (s > best_w) best_w = s, best = e;
        }
        group.push_back(best);
        dev[best] = d;
      }
    }
    // Swap refinement (Kernighan–Lin style, single swaps): exchange two experts of different
    // devices while that raises the within-device co-activation.
    auto gain_of_moving = [&](int e, int to) {  // Co-activation of e with device `to` minus own.
      int64_t s = 0;
      for (int f = 0; f < n; ++f) {
        if (f == e) continue;
        if (dev[f] == to) s += w[static_cast<size_t>(e) * n + f];
        if (dev[f] == dev[e]) s -= w[static_cast<size_t>(e) * n + f];
      }
      return s;
    };
    for (bool improved = true; improved;) {
      improved = false;
      for (int a = 0; a < n; ++a) {
        for (int b = a + 1; b < n; ++b) {
          if (dev[a] == dev[b]) continue;
          const int64_t gain = gain_of_moving(a, dev[b]) + gain_of_moving(b, dev[a]) -
                               2 * w[static_cast<size_t>(a) * n + b];
          if (gain > 0) {
            std::swap(dev[a], dev[b]);
            improved = true;
          }
        }
      }
    }
  }
  return Placement::FromAssignment(MoeLayers(trace), n, g, std::move(device_of));
}

}  // namespace semmoe::planner
