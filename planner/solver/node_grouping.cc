#include "planner/solver/node_grouping.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"

namespace semmoe::planner {

absl::StatusOr<std::vector<int64_t>> RankTraffic(
    const trace::TraceSet& trace, const Placement& placement,
    const std::vector<std::vector<int>>& token_device) {
  const int g = placement.num_devices(), k = trace.top_k();
  if (placement.num_layers() != trace.num_layers() ||
      placement.num_experts() != static_cast<int>(trace.header.num_experts) ||
      static_cast<int>(token_device.size()) != trace.num_layers()) {
    return absl::InvalidArgumentError("placement, trace and schedule differ in layers or experts");
  }
  std::vector<int64_t> traffic(static_cast<size_t>(g) * g, 0);
  std::vector<int64_t> seen(g, -1);
  for (int l = 0; l < trace.num_layers(); ++l) {
    if (static_cast<int64_t>(token_device[l].size()) != trace.num_tokens()) {
      return absl::InvalidArgumentError(absl::StrCat("schedule layer ", l, " has ",
                                                     token_device[l].size(), " tokens, the trace ",
                                                     trace.num_tokens()));
    }
    for (int64_t t = 0; t < trace.num_tokens(); ++t) {
      const int home = token_device[l][t];
      if (home < 0 || home >= g) {
        return absl::InvalidArgumentError(absl::StrCat("schedule device ", home, " of ", g));
      }
      const int64_t stamp = t * trace.num_layers() + l;
      const uint16_t* experts = trace.Experts(t, l);
      for (int j = 0; j < k; ++j) {
        const int d = placement.Serving(l, experts[j], home);
        if (d != home && seen[d] != stamp) {
          seen[d] = stamp;
          ++traffic[static_cast<size_t>(home) * g + d];
        }
      }
    }
  }
  return traffic;
}

double PlacedTrafficCost(const std::vector<int64_t>& traffic, const Topology& topology,
                         const std::vector<int>& relabel) {
  const int g = topology.num_ranks();
  double cost = 0;
  for (int a = 0; a < g; ++a) {
    for (int b = 0; b < g; ++b) {
      if (a != b) cost += traffic[static_cast<size_t>(a) * g + b] * topology.Cost(relabel[a], relabel[b]);
    }
  }
  return cost;
}

absl::StatusOr<std::vector<int>> NodeGrouping(const std::vector<int64_t>& traffic,
                                              const Topology& topology,
                                              const NodeGroupingOptions& options) {
  const int g = topology.num_ranks();
  if (traffic.size() != static_cast<size_t>(g) * g) {
    return absl::InvalidArgumentError(absl::StrCat("traffic has ", traffic.size(),
                                                   " entries, the topology ", g, " × ", g, " ranks"));
  }
  // Symmetric weights: a row a → b and one b → a cross the same link.
  std::vector<double> w(static_cast<size_t>(g) * g, 0);
  for (int a = 0; a < g; ++a) {
    for (int b = 0; b < g; ++b) {
      if (a != b) w[a * g + b] = static_cast<double>(traffic[a * g + b] + traffic[b * g + a]);
    }
  }
  // Cost of device a placed at rank pa: Σ_b w(a, b) · Cost(pa, p(b)); a swap of a's and b's
  // ranks changes the total by Δ (both endpoints' terms; the pair's own term is unchanged as
  // Cost is symmetric).
  auto improve = [&](std::vector<int>& place) {
    for (bool gained = true; gained;) {
      gained = false;
      for (int a = 0; a < g; ++a) {
        for (int b = a + 1; b < g; ++b) {
          double delta = 0;
          for (int c = 0; c < g; ++c) {
            if (c == a || c == b) continue;
            delta += (w[a * g + c] - w[b * g + c]) *
                     (topology.Cost(place[b], place[c]) - topology.Cost(place[a], place[c]));
          }
          if (delta < -1e-9) {
            std::swap(place[a], place[b]);
            gained = true;
          }
        }
      }
    }
  };
  auto total = [&](const std::vector<int>& place) {
    double cost = 0;
    for (int a = 0; a < g; ++a) {
      for (int b = a + 1; b < g; ++b) cost += w[a * g + b] * topology.Cost(place[a], place[b]);
    }
    return cost;
  };
  std::vector<int> best(g);
  std::iota(best.begin(), best.end(), 0);
  improve(best);
  double best_cost = total(best);
  std::mt19937_64 rng(options.seed);
  for (int s = 0; s < options.seeded_starts; ++s) {
    std::vector<int> place(g);
    std::iota(place.begin(), place.end(), 0);
    for (int i = g - 1; i > 0; --i) std::swap(place[i], place[rng() % (i + 1)]);
    improve(place);
    const double cost = total(place);
    if (cost < best_cost - 1e-9) best_cost = cost, best = std::move(place);
  }
  return best;
}

}  // namespace semmoe::planner
