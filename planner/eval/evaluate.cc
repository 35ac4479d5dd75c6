#include "planner/eval/evaluate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "planner/placement/balanced_assign.h"
#include "planner/eval/serving_rule.h"

namespace semmoe::planner {
namespace {

using trace::TraceSet;

absl::Status CheckMatch(const TraceSet& trace, const Placement& placement,
                        const EvalOptions& options) {
  if (options.topology != nullptr && options.topology->num_ranks() != placement.num_devices()) {
    return absl::InvalidArgumentError(
        absl::StrCat("topology ", options.topology->Describe(), " has ",
                     options.topology->num_ranks(), " ranks, the placement ",
                     placement.num_devices(), " devices"));
  }
  return CheckPlacementFits(trace, placement);
}

double MaxOverMean(const std::vector<int64_t>& counts) {
  int64_t total = 0, max = 0;
  for (int64_t c : counts) total += c, max = std::max(max, c);
  return total == 0 ? 1.0 : static_cast<double>(max) * counts.size() / total;
}

// Shared core: device_of_token(l, t) gives the token's device at layer l.
Metrics Evaluate(const TraceSet& trace, const Placement& placement,
                 const std::function<int(int, int64_t)>& device_of_token,
                 const EvalOptions& options) {
  const int layers = trace.num_layers(), k = trace.top_k(), g = placement.num_devices();
  const int64_t tokens = trace.num_tokens();
  Metrics m;
  int64_t local_total = 0, remote_copies = 0;
  std::vector<int64_t> load(g), token_load(g), exchanged(g);
  double time = 0;
  std::vector<int64_t> seen(g, -1);  // Last (token, layer) stamp that sent to each device.
  const Topology* topo = options.topology ? options.topology : placement.topology();
  std::vector<int64_t> node_seen(topo ? topo->num_nodes() : 0, -1);
  int64_t node_local = 0, cross_copies = 0, cross_rank_copies = 0, intra_copies = 0;
  // The engine's rule for which holder serves (with replicas, the per-batch holder choice).
  ServingRule rule(trace, placement, device_of_token, options.holder_choice_batch_tokens);
  for (int l = 0; l < layers; ++l) {
    std::fill(load.begin(), load.end(), 0);
    std::fill(token_load.begin(), token_load.end(), 0);
    std::fill(exchanged.begin(), exchanged.end(), 0);
    int64_t local = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      rule.BeginToken(l, t);
      const int home = device_of_token(l, t);
      ++token_load[home];
      const uint16_t* experts = trace.Experts(t, l);
      for (int j = 0; j < k; ++j) {
        const int d = rule.Serve(l, experts[j], home);
        ++load[d];
        if (topo != nullptr && topo->SameNode(d, home)) ++node_local;
        if (d == home) {
          ++local;
        } else if (seen[d] != t * layers + l) {
          seen[d] = t * layers + l;
          ++remote_copies;
          ++exchanged[home];
          ++exchanged[d];
          if (topo == nullptr) continue;
          const int node = topo->NodeOf(d);
          if (node == topo->NodeOf(home)) {
            ++intra_copies;
            continue;
          }
          ++cross_rank_copies;
          if (node_seen[node] != t * layers + l) {
            node_seen[node] = t * layers + l;
            ++cross_copies;
          }
          if (d != topo->Gateway(home, node)) ++intra_copies;  // The fan-out inside `node`.
        }
      }
    }
    local_total += local;
    double busiest = 0;
    for (int d = 0; d < g; ++d) {
      busiest = std::max(busiest, load[d] + options.link_cost * exchanged[d]);
    }
    time += busiest;
    m.lar_per_layer.push_back(tokens == 0 ? 0.0 : static_cast<double>(local) / (tokens * k));
    m.expert_load_imbalance_per_layer.push_back(MaxOverMean(load));
    m.expert_load_imbalance = std::max(m.expert_load_imbalance, MaxOverMean(load));
    m.token_load_imbalance = std::max(m.token_load_imbalance, MaxOverMean(token_load));
  }
  const int64_t activations = tokens * layers * k;
  m.lar = activations == 0 ? 0.0 : static_cast<double>(local_total) / activations;
  if (tokens > 0) {
    m.moe_time_per_token = time / static_cast<double>(tokens);
    const double row_bytes = 2.0 * options.hidden_size * options.bytes_per_value / tokens;
    m.a2a_bytes_per_token = remote_copies * row_bytes;
    m.cross_node_bytes_per_token = cross_copies * row_bytes;
    m.cross_node_bytes_per_token_rank_dedup = cross_rank_copies * row_bytes;
    m.intra_node_bytes_per_token = intra_copies * row_bytes;
  }
  if (topo != nullptr) {
    m.has_topology = true;
    m.cross_node_rows_per_token = tokens == 0 ? 0.0 : 2.0 * cross_copies / tokens;
    m.node_lar = activations == 0 ? 0.0 : static_cast<double>(node_local) / activations;
  }
  return m;
}

}  // namespace

absl::StatusOr<Metrics> EvaluateDp(const TraceSet& trace, const Placement& placement,
                                   const std::vector<int>& request_device,
                                   const EvalOptions& options) {
  RETURN_IF_ERROR(CheckMatch(trace, placement, options));
  ASSIGN_OR_RETURN(const std::vector<int> token_device,
                   TokenDevicesOfRequests(trace, request_device, placement.num_devices()));
  return Evaluate(
      trace, placement, [&](int, int64_t t) { return token_device[t]; }, options);
}

absl::StatusOr<Metrics> EvaluateTp(const TraceSet& trace, const Placement& placement,
                                   const std::vector<std::vector<int>>& token_device,
                                   const EvalOptions& options) {
  RETURN_IF_ERROR(CheckMatch(trace, placement, options));
  RETURN_IF_ERROR(CheckTokenDevices(trace, token_device, placement.num_devices()));
  return Evaluate(
      trace, placement, [&](int l, int64_t t) { return token_device[l][t]; }, options);
}

std::vector<int> RoundRobinRequests(const TraceSet& trace, int num_devices) {
  std::vector<int> devices(trace.num_requests());
  for (int r = 0; r < trace.num_requests(); ++r) devices[r] = r % num_devices;
  return devices;
}

std::vector<std::vector<int>> ContiguousChunks(const TraceSet& trace, int num_devices,
                                               int batch_tokens) {
  std::vector<int> row(trace.num_tokens());
  for (int64_t start = 0; start < trace.num_tokens(); start += batch_tokens) {
    const int64_t n = std::min<int64_t>(batch_tokens, trace.num_tokens() - start);
    for (int64_t i = 0; i < n; ++i) row[start + i] = static_cast<int>(i * num_devices / n);
  }
  return std::vector<std::vector<int>>(trace.num_layers(), row);
}

double DpRequestBound(const TraceSet& trace, int num_devices) {
  const int n = static_cast<int>(trace.header.num_experts), k = trace.top_k();
  const int keep = n / num_devices;
  int64_t kept = 0;
  std::vector<int64_t> counts(n);
  for (int r = 0; r < trace.num_requests(); ++r) {
    for (int l = 0; l < trace.num_layers(); ++l) {
      std::fill(counts.begin(), counts.end(), 0);
      for (int64_t t = trace.request_begin[r]; t < trace.request_begin[r + 1]; ++t) {
        for (int j = 0; j < k; ++j) ++counts[trace.Experts(t, l)[j]];
      }
      std::nth_element(counts.begin(), counts.begin() + keep, counts.end(),
                       std::greater<int64_t>());
      for (int i = 0; i < keep; ++i) kept += counts[i];
    }
  }
  const int64_t activations = trace.num_tokens() * trace.num_layers() * k;
  return activations == 0 ? 0.0 : static_cast<double>(kept) / activations;
}

double TpTokenOracle(const TraceSet& trace, const Placement& placement) {
  const int k = trace.top_k();
  std::vector<int> per_device(placement.num_devices());
  int64_t best_total = 0;
  for (int64_t t = 0; t < trace.num_tokens(); ++t) {
    for (int l = 0; l < trace.num_layers(); ++l) {
      std::fill(per_device.begin(), per_device.end(), 0);
      int best = 0;
      for (int j = 0; j < k; ++j) {
        for (int32_t d : placement.HoldersOf(l, trace.Experts(t, l)[j])) {
          best = std::max(best, ++per_device[d]);
        }
      }
      best_total += best;
    }
  }
  const int64_t activations = trace.num_tokens() * trace.num_layers() * k;
  return activations == 0 ? 0.0 : static_cast<double>(best_total) / activations;
}

double TpBalancedBound(const TraceSet& trace, const Placement& placement, int batch_tokens,
                       double slack) {
  const int g = placement.num_devices(), k = trace.top_k();
  std::vector<float> w;
  std::vector<double> price(g), grad(g), best_price(g);
  double total = 0;
  for (int l = 0; l < trace.num_layers(); ++l) {
    for (int64_t start = 0; start < trace.num_tokens(); start += batch_tokens) {
      const int b = static_cast<int>(std::min<int64_t>(batch_tokens, trace.num_tokens() - start));
      w.assign(static_cast<size_t>(b) * g, 0.0f);
      for (int i = 0; i < b; ++i) {
        for (int j = 0; j < k; ++j) {
          for (int32_t d : placement.HoldersOf(l, trace.Experts(start + i, l)[j])) {
            w[static_cast<size_t>(i) * g + d] += 1.0f;
          }
        }
      }
      const std::vector<int64_t> chunk = ChunkCapacities(b, g, slack);
      std::fill(price.begin(), price.end(), 0.0);
      double best = std::numeric_limits<double>::infinity();
      for (int iteration = 0; iteration < 150; ++iteration) {
        // The dual at `price` and its subgradient.
        double value = 0;
        for (int d = 0; d < g; ++d) {
          value += chunk[d] * price[d];
          grad[d] = static_cast<double>(chunk[d]);
        }
        for (int i = 0; i < b; ++i) {
          int arg = 0;
          double top = -std::numeric_limits<double>::infinity();
          for (int d = 0; d < g; ++d) {
            const double v = w[static_cast<size_t>(i) * g + d] - price[d];
            if (v > top) top = v, arg = d;
          }
          value += top;
          grad[arg] -= 1.0;
        }
        best = std::min(best, value);
        double norm = 0;
        for (double x : grad) norm += x * x;
        if (norm == 0) break;  // Optimal: every chunk exactly filled by the maximisers.
        const double step = 0.5 / std::sqrt(1.0 + iteration) / std::sqrt(norm);
        // Projected onto p ≥ 0 (capacities are upper limits; with equal chunks, which add up to
        // the batch, shifting all prices changes nothing, so this loses nothing).
        for (int d = 0; d < g; ++d) price[d] = std::max(0.0, price[d] - step * grad[d]);
      }
      total += best;
    }
  }
  const int64_t activations = trace.num_tokens() * trace.num_layers() * k;
  return activations == 0 ? 0.0 : total / activations;
}

}  // namespace semmoe::planner
