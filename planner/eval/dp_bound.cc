#include "planner/eval/dp_bound.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"

namespace semmoe::planner {
namespace {

using trace::TraceSet;

// The activation counts w[r][l][e] > 0, one entry each, grouped by (request, layer) in
// `by_request_layer` and by (layer, expert) in `by_expert`.
struct Counts {
  std::vector<int32_t> request;  // [entry]
  std::vector<double> w;         // [entry]
  std::vector<int64_t> row_begin;     // [(r, l)] → first entry; entries of a row are contiguous.
  std::vector<std::vector<int64_t>> by_expert;  // [l * N + e] → entries
};

Counts CountActivations(const TraceSet& trace) {
  const int n = static_cast<int>(trace.header.num_experts), k = trace.top_k();
  Counts c;
  c.by_expert.resize(static_cast<size_t>(trace.num_layers()) * n);
  std::vector<int32_t> counts(n);
  for (int r = 0; r < trace.num_requests(); ++r) {
    for (int l = 0; l < trace.num_layers(); ++l) {
      c.row_begin.push_back(static_cast<int64_t>(c.w.size()));
      std::fill(counts.begin(), counts.end(), 0);
      for (int64_t t = trace.request_begin[r]; t < trace.request_begin[r + 1]; ++t) {
        for (int j = 0; j < k; ++j) ++counts[trace.Experts(t, l)[j]];
      }
      for (int e = 0; e < n; ++e) {
        if (counts[e] == 0) continue;
        c.by_expert[static_cast<size_t>(l) * n + e].push_back(static_cast<int64_t>(c.w.size()));
        c.request.push_back(r);
        c.w.push_back(counts[e]);
      }
    }
  }
  c.row_begin.push_back(static_cast<int64_t>(c.w.size()));
  return c;
}

}  // namespace

absl::StatusOr<DpBound> DpCapacityBound(const TraceSet& trace, const DpBoundOptions& options) {
  const int g = options.num_devices;
  const int n = static_cast<int>(trace.header.num_experts);
  if (g <= 0 || n % g != 0) {
    return absl::InvalidArgumentError(absl::StrCat(g, " devices do not divide ", n, " experts"));
  }
  if (trace.num_tokens() == 0) return absl::InvalidArgumentError("empty trace");
  const int keep = n / g;
  const double activations =
      static_cast<double>(trace.num_tokens()) * trace.num_layers() * trace.top_k();
  const double capacity =
      std::floor((1.0 + options.token_balance_eps) * static_cast<double>(trace.num_tokens()) / g);
  std::vector<double> tokens(trace.num_requests());
  for (int r = 0; r < trace.num_requests(); ++r) {
    tokens[r] = static_cast<double>(trace.request_begin[r + 1] - trace.request_begin[r]);
  }
  const Counts c = CountActivations(trace);
  const int64_t entries = static_cast<int64_t>(c.w.size());
  std::vector<double> lambda(entries, 0.0), subgradient(entries);
  std::vector<int64_t> order;

  // B(λ), filling the subgradient (knapsack share − top-set membership) as it goes.
  auto evaluate = [&]() {
    double bound = 0;
    std::fill(subgradient.begin(), subgradient.end(), 0.0);
    for (size_t row = 0; row + 1 < c.row_begin.size(); ++row) {
      const int64_t b = c.row_begin[row], e = c.row_begin[row + 1];
      order.resize(e - b);
      std::iota(order.begin(), order.end(), b);
      const size_t take = std::min<size_t>(keep, order.size());
      std::partial_sort(order.begin(), order.begin() + take, order.end(),
                        [&](int64_t x, int64_t y) { return c.w[x] - lambda[x] > c.w[y] - lambda[y]; });
      // Experts the request never used stand at 0; a negative entry yields its slot to them
      // while any are left.
      int64_t zeros = n - (e - b);
      for (int i = 0; i < keep; ++i) {
        if (i < static_cast<int>(order.size())) {
          const double v = c.w[order[i]] - lambda[order[i]];
          if (v >= 0 || zeros == 0) {
            bound += v;
            subgradient[order[i]] -= 1;
            continue;
          }
        }
        if (zeros > 0) --zeros;
      }
    }
    for (const std::vector<int64_t>& items : c.by_expert) {
      order.clear();
      for (int64_t i : items) {
        if (lambda[i] > 0) order.push_back(i);
      }
      std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return lambda[x] * tokens[c.request[y]] > lambda[y] * tokens[c.request[x]];
      });
      double room = capacity;
      for (int64_t i : order) {
        if (room <= 0) break;
        const double share = std::min(1.0, room / tokens[c.request[i]]);
        bound += share * lambda[i];
        subgradient[i] += share;
        room -= share * tokens[c.request[i]];
      }
    }
    return bound;
  };

  DpBound result;
  double current = evaluate();
  double best = current;
  result.per_request = best / activations;
  double scale = 1.0;  // Polyak step multiplier, halved when the bound stops improving.
  int stalled = 0;
  const double lower = options.lower * activations;
  for (int it = 0; it < options.iterations; ++it) {
    double norm = 0;
    for (double s : subgradient) norm += s * s;
    if (norm == 0) break;  // No direction lowers the bound: λ is optimal.
    const double target = lower > 0 && lower < best ? lower : 0.5 * best;
    const double step = scale * (current - target) / norm;
    for (int64_t i = 0; i < entries; ++i) lambda[i] -= step * subgradient[i];
    current = evaluate();
    result.iterations = it + 1;
    if (current < best - 1e-9 * activations) {
      best = current;
      stalled = 0;
    } else if (++stalled >= 10) {
      scale /= 2;
      stalled = 0;
      if (scale < 1e-4) break;
    }
  }
  result.capacity = best / activations;
  return result;
}

}  // namespace semmoe::planner
