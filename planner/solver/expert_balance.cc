#include "planner/solver/expert_balance.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

namespace semmoe::planner {
namespace {

using trace::TraceSet;

// load[c][e] at layer l: activations of expert e by the requests of group c.
std::vector<std::vector<double>> GroupLoads(const TraceSet& trace, int l,
                                            const std::vector<int>& group, int groups) {
  std::vector<std::vector<double>> load(groups,
                                        std::vector<double>(trace.header.num_experts, 0.0));
  for (int r = 0; r < trace.num_requests(); ++r) {
    std::vector<double>& row = load[group.empty() ? 0 : group[r]];
    for (int64_t t = trace.request_begin[r]; t < trace.request_begin[r + 1]; ++t) {
      for (int j = 0; j < trace.top_k(); ++j) row[trace.Experts(t, l)[j]] += 1;
    }
  }
  return load;
}

// The groups balanced on: the whole mix first, then every group with at least 1 / (4 · groups)
// of the activations.
std::vector<std::vector<double>> BalancedGroups(const TraceSet& trace, int l,
                                                const std::vector<int>& request_group) {
  const int groups =
      request_group.empty() ? 1
                            : 1 + *std::max_element(request_group.begin(), request_group.end());
  std::vector<std::vector<double>> load = GroupLoads(trace, l, request_group, groups);
  std::vector<double> mix(trace.header.num_experts, 0.0);
  double all = 0;
  for (const auto& row : load) {
    for (size_t e = 0; e < row.size(); ++e) mix[e] += row[e], all += row[e];
  }
  std::vector<std::vector<double>> kept = {mix};
  if (groups > 1) {
    for (auto& row : load) {
      const double share = std::accumulate(row.begin(), row.end(), 0.0) / std::max(1.0, all);
      if (share >= 1.0 / (4 * groups)) kept.push_back(std::move(row));
    }
  }
  return kept;
}

}  // namespace

std::vector<int> UsageClusters(const TraceSet& trace, int groups, uint64_t seed) {
  const int requests = trace.num_requests();
  const int n = static_cast<int>(trace.header.num_experts), layers = trace.num_layers();
  const size_t dim = static_cast<size_t>(layers) * n;
  if (groups <= 1 || requests == 0) return std::vector<int>(requests, 0);
  std::vector<float> x(static_cast<size_t>(requests) * dim, 0.0f);
  for (int r = 0; r < requests; ++r) {
    const float scale =
        1.0f / std::max<float>(1, (trace.request_begin[r + 1] - trace.request_begin[r]) *
                                      trace.top_k());
    for (int64_t t = trace.request_begin[r]; t < trace.request_begin[r + 1]; ++t) {
      for (int l = 0; l < layers; ++l) {
        for (int j = 0; j < trace.top_k(); ++j) {
          x[r * dim + static_cast<size_t>(l) * n + trace.Experts(t, l)[j]] += scale;
        }
      }
    }
  }
  std::mt19937_64 rng(seed);
  std::vector<int> order(requests);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  const int k = std::min(groups, requests);
  std::vector<float> centre(static_cast<size_t>(k) * dim);
  for (int c = 0; c < k; ++c) {
    std::copy_n(x.begin() + order[c] * dim, dim, centre.begin() + c * dim);
  }
  std::vector<int> group(requests, 0);
  for (int round = 0; round < 10; ++round) {
    for (int r = 0; r < requests; ++r) {
      double best = std::numeric_limits<double>::max();
      for (int c = 0; c < k; ++c) {
        double s = 0;
        for (size_t i = 0; i < dim; ++i) {
          const double d = x[r * dim + i] - centre[c * dim + i];
          s += d * d;
        }
        if (s < best) best = s, group[r] = c;
      }
    }
    std::fill(centre.begin(), centre.end(), 0.0f);
    std::vector<int> members(k, 0);
    for (int r = 0; r < requests; ++r) {
      ++members[group[r]];
      for (size_t i = 0; i < dim; ++i) centre[group[r] * dim + i] += x[r * dim + i];
    }
    for (int c = 0; c < k; ++c) {
      for (size_t i = 0; i < dim && members[c] > 0; ++i) centre[c * dim + i] /= members[c];
    }
  }
  return group;
}

void BalanceExpertLoad(const TraceSet& trace, const BalanceOptions& o,
                       std::vector<std::vector<int32_t>>& device_of) {
  const int n = static_cast<int>(trace.header.num_experts), g = o.num_devices;
  const double cap = 1.0 + o.eps;
  for (int l = 0; l < trace.num_layers(); ++l) {
    std::vector<std::vector<double>> load = BalancedGroups(trace, l, o.request_group);
    const int groups = static_cast<int>(load.size());
    for (auto& row : load) {  // Each group's mean per device becomes 1.
      const double total = std::accumulate(row.begin(), row.end(), 0.0);
      for (double& v : row) v = total > 0 ? v * g / total : 0;
    }
    std::vector<std::vector<double>> local(n, std::vector<double>(g, 0.0));  // [expert][device]
    for (size_t r = 0; r < o.request_device.size(); ++r) {
      for (int64_t t = trace.request_begin[r]; t < trace.request_begin[r + 1]; ++t) {
        for (int j = 0; j < trace.top_k(); ++j) local[trace.Experts(t, l)[j]][o.request_device[r]] += 1;
      }
    }
    std::vector<std::vector<double>> ratio(groups, std::vector<double>(g, 0.0));  // [group][dev]
    for (int c = 0; c < groups; ++c) {
      for (int e = 0; e < n; ++e) ratio[c][device_of[l][e]] += load[c][e];
    }
    for (int iteration = 0; iteration < 4 * n; ++iteration) {
      int hot = 0, hot_group = 0;
      for (int c = 0; c < groups; ++c) {
        for (int d = 0; d < g; ++d) {
          if (ratio[c][d] > ratio[hot_group][hot]) hot_group = c, hot = d;
        }
      }
      const double worst = ratio[hot_group][hot];
      if (worst <= cap) break;
      int best_a = -1, best_b = -1;
      double best_loss = 0, best_max = 0;
      for (int a = 0; a < n; ++a) {
        if (device_of[l][a] != hot) continue;
        for (int b = 0; b < n; ++b) {
          const int other = device_of[l][b];
          if (other == hot) continue;
          double after = 0;  // The busier of the two devices after the swap, over groups.
          for (int c = 0; c < groups; ++c) {
            const double moved = load[c][b] - load[c][a];
            after = std::max({after, ratio[c][hot] + moved, ratio[c][other] - moved});
          }
          if (after >= worst - 1e-12) continue;
          const double loss = local[a][hot] + local[b][other] - local[a][other] - local[b][hot];
          if (best_a < 0 || loss < best_loss - 1e-9 ||
              (loss < best_loss + 1e-9 && after < best_max)) {
            best_a = a, best_b = b, best_loss = loss, best_max = after;
          }
        }
      }
      if (best_a < 0) break;
      const int other = device_of[l][best_b];
      for (int c = 0; c < groups; ++c) {
        const double moved = load[c][best_b] - load[c][best_a];
        ratio[c][hot] += moved;
        ratio[c][other] -= moved;
      }
      device_of[l][best_a] = other;
      device_of[l][best_b] = hot;
    }
  }
}

double GroupLoadImbalance(const TraceSet& trace, const std::vector<int>& request_group,
                          const std::vector<std::vector<int32_t>>& device_of, int num_devices) {
  double worst = 0;
  const int groups =
      request_group.empty() ? 1
                            : 1 + *std::max_element(request_group.begin(), request_group.end());
  for (int l = 0; l < trace.num_layers(); ++l) {
    for (const auto& row : GroupLoads(trace, l, request_group, groups)) {
      const double total = std::accumulate(row.begin(), row.end(), 0.0);
      if (total == 0) continue;
      std::vector<double> device(num_devices, 0.0);
      for (size_t e = 0; e < row.size(); ++e) device[device_of[l][e]] += row[e];
      worst = std::max(worst, *std::max_element(device.begin(), device.end()) * num_devices /
                                  total);
    }
  }
  return worst;
}

}  // namespace semmoe::planner
