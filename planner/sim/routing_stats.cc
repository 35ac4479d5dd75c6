#include "planner/sim/routing_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_map>
#include <vector>

namespace semmoe::planner::sim {
namespace {

using trace::TraceSet;

// The indices of the k largest of `counts` (ties: lower index).
std::vector<int> TopK(const std::vector<double>& counts, int k) {
  std::vector<int> order(counts.size());
  std::iota(order.begin(), order.end(), 0);
  k = std::min<int>(k, static_cast<int>(order.size()));
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
    return counts[a] > counts[b] || (counts[a] == counts[b] && a < b);
  });
  order.resize(k);
  return order;
}

double Lift(double hit, double base) { return base >= 1 ? 0 : (hit - base) / (1 - base); }

bool Learn(const TraceSet& t, int r) { return r % 2 == 0; }

// The layers the id, request and transition statistics look at: all, or 8 spread evenly (the
// per-id counts of a 58-layer, 256-expert trace would not fit in memory).
std::vector<int> SampleLayers(int layers) {
  std::vector<int> out;
  const int n = std::min(layers, 8);
  for (int i = 0; i < n; ++i) out.push_back(static_cast<int>(int64_t{i} * layers / n));
  return out;
}

// Mean over the odd requests and layers of the share of a request's activations in its own top
// M experts, with `request_of` mapping a token to its request.
double Concentration(const TraceSet& t, const std::vector<int>& request_of, int m) {
  const int k = t.top_k(), n = t.header.num_experts;
  const std::vector<int> sample = SampleLayers(t.num_layers());
  const int layers = static_cast<int>(sample.size());
  std::vector<std::vector<double>> counts(int64_t{t.num_requests()} * layers,
                                          std::vector<double>());
  for (int64_t tok = 0; tok < t.num_tokens(); ++tok) {
    const int r = request_of[tok];
    if (Learn(t, r)) continue;
    for (int i = 0; i < layers; ++i) {
      const int l = sample[i];
      std::vector<double>& c = counts[int64_t{r} * layers + i];
      if (c.empty()) c.assign(n, 0);
      for (int j = 0; j < k; ++j) ++c[t.Experts(tok, l)[j]];
    }
  }
  double sum = 0;
  int64_t cells = 0;
  for (const std::vector<double>& c : counts) {
    if (c.empty()) continue;
    const double all = std::accumulate(c.begin(), c.end(), 0.0);
    double top = 0;
    for (int e : TopK(c, m)) top += c[e];
    sum += top / all;
    ++cells;
  }
  return cells == 0 ? 0 : sum / cells;
}

}  // namespace

RoutingStats MeasureRouting(const TraceSet& t) {
  RoutingStats s;
  const int layers = t.num_layers(), k = t.top_k(), n = t.header.num_experts;
  std::vector<int> request_of(t.num_tokens());
  for (int r = 0; r < t.num_requests(); ++r) {
    for (int64_t tok = t.request_begin[r]; tok < t.request_begin[r + 1]; ++tok) request_of[tok] = r;
  }
  // Popularity, and the popular K per layer (learning half).
  std::vector<std::vector<double>> load(layers, std::vector<double>(n, 0)),
      learned(layers, std::vector<double>(n, 0));
  for (int64_t tok = 0; tok < t.num_tokens(); ++tok) {
    for (int l = 0; l < layers; ++l) {
      for (int j = 0; j < k; ++j) {
        ++load[l][t.Experts(tok, l)[j]];
        if (Learn(t, request_of[tok])) ++learned[l][t.Experts(tok, l)[j]];
      }
    }
  }
  for (int l = 0; l < layers; ++l) {
    const double mean = std::accumulate(load[l].begin(), load[l].end(), 0.0) / n;
    double var = 0;
    for (double x : load[l]) var += (x - mean) * (x - mean);
    s.popularity_cv += mean > 0 ? std::sqrt(var / n) / mean / layers : 0;
  }
  std::vector<std::vector<int>> popular(layers);
  for (int l = 0; l < layers; ++l) popular[l] = TopK(learned[l], k);

  // Token ids and layer transitions (sampled layers), learned on the even requests.
  const std::vector<int> sample = SampleLayers(layers);
  const int sampled = static_cast<int>(sample.size());
  std::unordered_map<uint64_t, std::vector<float>> by_id;  // (id, sampled layer) → counts
  std::unordered_map<uint32_t, int> seen;
  std::vector<std::vector<double>> transition(int64_t{sampled} * n, std::vector<double>(n, 0));
  for (int64_t tok = 0; tok < t.num_tokens(); ++tok) {
    if (!Learn(t, request_of[tok])) continue;
    ++seen[t.tokens[tok]];
    for (int i = 0; i < sampled; ++i) {
      const int l = sample[i];
      std::vector<float>& c = by_id[uint64_t{t.tokens[tok]} * sampled + i];
      if (c.empty()) c.assign(n, 0);
      for (int j = 0; j < k; ++j) ++c[t.Experts(tok, l)[j]];
      if (l == 0) continue;
      for (int a = 0; a < k; ++a) {
        for (int j = 0; j < k; ++j)
          ++transition[int64_t{i} * n + t.Experts(tok, l - 1)[a]][t.Experts(tok, l)[j]];
      }
    }
  }
  int64_t token_hits = 0, token_base = 0, token_all = 0, layer_hits = 0, layer_base = 0,
          layer_all = 0;
  std::vector<double> sum(n);
  std::unordered_map<uint64_t, std::vector<int>> top_of_id;  // Learned once per (id, layer).
  // The previous-layer predictor on at most ~20,000 (token, layer) pairs.
  int64_t transitions = 0;
  const int64_t layer_stride = std::max<int64_t>(1, t.num_tokens() / 2 * sampled / 20000);
  for (int64_t tok = 0; tok < t.num_tokens(); ++tok) {
    if (Learn(t, request_of[tok])) continue;
    const auto it = seen.find(t.tokens[tok]);
    const bool known = it != seen.end() && it->second >= 2;
    for (int i = 0; i < sampled; ++i) {
      const int l = sample[i];
      const uint16_t* e = t.Experts(tok, l);
      auto hits = [&](const std::vector<int>& set) {
        int h = 0;
        for (int j = 0; j < k; ++j) h += std::find(set.begin(), set.end(), e[j]) != set.end();
        return h;
      };
      const int base = hits(popular[l]);
      if (known) {
        const uint64_t key = uint64_t{t.tokens[tok]} * sampled + i;
        auto cached = top_of_id.find(key);
        if (cached == top_of_id.end()) {
          const std::vector<float>& c = by_id[key];
          cached = top_of_id.emplace(key, TopK(std::vector<double>(c.begin(), c.end()), k)).first;
        }
        token_hits += hits(cached->second);
        token_base += base;
        token_all += k;
      }
      if (l > 0 && ++transitions % layer_stride == 0) {  // A sample of the tokens (speed).
        std::fill(sum.begin(), sum.end(), 0);
        for (int a = 0; a < k; ++a) {
          const std::vector<double>& row = transition[int64_t{i} * n + t.Experts(tok, l - 1)[a]];
          for (int x = 0; x < n; ++x) sum[x] += row[x];
        }
        layer_hits += hits(TopK(sum, k));
        layer_base += base;
        layer_all += k;
      }
    }
  }
  if (token_all > 0) {
    s.token_lift = Lift(static_cast<double>(token_hits) / token_all,
                        static_cast<double>(token_base) / token_all);
  }
  if (layer_all > 0) {
    s.layer_lift = Lift(static_cast<double>(layer_hits) / layer_all,
                        static_cast<double>(layer_base) / layer_all);
  }
  // Requests: against their tokens shuffled among the odd requests.
  const int m = std::max(k, n / 8);
  std::vector<int> shuffled = request_of;
  std::vector<int64_t> odd;
  for (int64_t tok = 0; tok < t.num_tokens(); ++tok) {
    if (!Learn(t, request_of[tok])) odd.push_back(tok);
  }
  std::vector<int> owners;
  for (int64_t tok : odd) owners.push_back(request_of[tok]);
  std::shuffle(owners.begin(), owners.end(), std::mt19937(7));
  for (size_t i = 0; i < odd.size(); ++i) shuffled[odd[i]] = owners[i];
  s.request_lift = Lift(Concentration(t, request_of, m), Concentration(t, shuffled, m));
  return s;
}

}  // namespace semmoe::planner::sim
