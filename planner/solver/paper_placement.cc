#include "planner/solver/paper_placement.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "planner/solver/baselines.h"
#include "planner/solver/scale.h"

namespace semmoe::planner {
namespace {

using trace::TraceSet;

// Per request, per layer, per expert: activations (the trace, counted once).
struct Counts {
  int requests = 0, layers = 0, experts = 0;
  std::vector<int32_t> c;  // [r][l][e]
  std::vector<int64_t> length;
  int64_t total = 0;
  int32_t& at(int r, int l, int e) {
    return c[(static_cast<size_t>(r) * layers + l) * experts + e];
  }
  int32_t at(int r, int l, int e) const {
    return c[(static_cast<size_t>(r) * layers + l) * experts + e];
  }
};

Counts Count(const TraceSet& trace) {
  Counts k{.requests = trace.num_requests(),
           .layers = trace.num_layers(),
           .experts = static_cast<int>(trace.header.num_experts)};
  k.c.assign(static_cast<size_t>(k.requests) * k.layers * k.experts, 0);
  for (int r = 0; r < k.requests; ++r) {
    k.length.push_back(trace.request_begin[r + 1] - trace.request_begin[r]);
    for (int64_t t = trace.request_begin[r]; t < trace.request_begin[r + 1]; ++t) {
      for (int l = 0; l < k.layers; ++l) {
        const uint16_t* e = trace.Experts(t, l);
        for (int a = 0; a < trace.top_k(); ++a) ++k.at(r, l, e[a]);
      }
    }
  }
  k.total = std::accumulate(k.c.begin(), k.c.end(), int64_t{0});
  return k;
}

// Requests, longest first (ties by index).
std::vector<int> LongestFirst(const Counts& k) {
  std::vector<int> order(k.requests);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return k.length[a] > k.length[b]; });
  return order;
}

// Each request, longest first, to its best-scoring device with token quota left.
template <typename Score>
std::vector<int> Schedule(const Counts& k, int g, double eps, Score score) {
  const int64_t all = std::accumulate(k.length.begin(), k.length.end(), int64_t{0});
  const double quota = (1 + eps) * static_cast<double>(all) / g;
  std::vector<double> load(g, 0);
  std::vector<int> device(k.requests, 0);
  for (int r : LongestFirst(k)) {
    int best = -1;
    double best_score = 0;
    for (int d = 0; d < g; ++d) {
      if (load[d] + k.length[r] > quota && load[d] > 0) continue;
      const double s = score(r, d);
      if (best < 0 || s > best_score) best = d, best_score = s;
    }
    if (best < 0) best = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    device[r] = best;
    load[best] += static_cast<double>(k.length[r]);
  }
  return device;
}

// Step 1: k-means over the requests' normalised profiles, then a quota-respecting schedule.
std::vector<int> Cluster(const Counts& k, const PaperOptions& o, std::mt19937_64& rng) {
  const int g = o.num_devices, dim = k.layers * k.experts;
  std::vector<float> profile(static_cast<size_t>(k.requests) * dim);
  for (int r = 0; r < k.requests; ++r) {
    const double norm = std::max<double>(1, k.length[r]);
    for (int i = 0; i < dim; ++i) {
      profile[static_cast<size_t>(r) * dim + i] =
          static_cast<float>(k.c[static_cast<size_t>(r) * dim + i] / norm);
    }
  }
  std::vector<float> centroid(static_cast<size_t>(g) * dim);
  std::vector<int> order(k.requests);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (int d = 0; d < g; ++d) {
    const int r = order[d % k.requests];
    std::copy_n(profile.begin() + static_cast<size_t>(r) * dim, dim,
                centroid.begin() + static_cast<size_t>(d) * dim);
  }
  auto distance = [&](int r, int d) {
    double s = 0;
    for (int i = 0; i < dim; ++i) {
      const double x = profile[static_cast<size_t>(r) * dim + i] -
                       centroid[static_cast<size_t>(d) * dim + i];
      s += x * x;
    }
    return s;
  };
  std::vector<int> device(k.requests, 0);
  for (int round = 0; round < o.kmeans_rounds; ++round) {
    device = Schedule(k, g, o.token_balance_eps, [&](int r, int d) { return -distance(r, d); });
    std::fill(centroid.begin(), centroid.end(), 0.0f);
    std::vector<int> members(g, 0);
    for (int r = 0; r < k.requests; ++r) {
      ++members[device[r]];
      for (int i = 0; i < dim; ++i) {
        centroid[static_cast<size_t>(device[r]) * dim + i] +=
            profile[static_cast<size_t>(r) * dim + i];
      }
    }
    for (int d = 0; d < g; ++d) {
      if (members[d] == 0) continue;
      for (int i = 0; i < dim; ++i) centroid[static_cast<size_t>(d) * dim + i] /= members[d];
    }
  }
  return device;
}

// act[l][d][e]: activations of expert e at layer l by the requests on device d.
std::vector<int64_t> DeviceActivations(const Counts& k, const std::vector<int>& device, int g) {
  std::vector<int64_t> act(static_cast<size_t>(k.layers) * g * k.experts, 0);
  for (int r = 0; r < k.requests; ++r) {
    for (int l = 0; l < k.layers; ++l) {
      for (int e = 0; e < k.experts; ++e) {
        act[(static_cast<size_t>(l) * g + device[r]) * k.experts + e] += k.at(r, l, e);
      }
    }
  }
  return act;
}

int64_t Local(const std::vector<int64_t>& act, const std::vector<std::vector<int32_t>>& device_of,
              int g, int n) {
  int64_t local = 0;
  for (size_t l = 0; l < device_of.size(); ++l) {
    for (int e = 0; e < n; ++e) local += act[(l * g + device_of[l][e]) * n + e];
  }
  return local;
}

// Random pairwise swaps between devices, kept when local activations rise.
void Swaps(const std::vector<int64_t>& act, int g, int n, int attempts, std::mt19937_64& rng,
           std::vector<std::vector<int32_t>>& device_of) {
  std::uniform_int_distribution<int> pick(0, n - 1);
  for (size_t l = 0; l < device_of.size(); ++l) {
    std::vector<int32_t>& dev = device_of[l];
    auto a = [&](int d, int e) { return act[(l * g + d) * n + e]; };
    for (int i = 0; i < attempts; ++i) {
      const int e1 = pick(rng), e2 = pick(rng);
      const int d1 = dev[e1], d2 = dev[e2];
      if (d1 == d2) continue;
      if (a(d1, e2) + a(d2, e1) > a(d1, e1) + a(d2, e2)) std::swap(dev[e1], dev[e2]);
    }
  }
}

// Step 2 for one layer: the greedy scored placement.
std::vector<int32_t> PlaceLayer(const TraceSet& trace, const Counts& k,
                                const std::vector<int64_t>& act, int l, const PaperOptions& o) {
  const int g = o.num_devices, n = k.experts, per = n / g;
  const Coactivation counts = CountCoactivation(trace, l);
  const std::vector<int64_t>& co = counts.pairs;
  const std::vector<int64_t>& load = counts.load;
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return load[a] > load[b]; });
  const double max_co = std::max<double>(1, *std::max_element(co.begin(), co.end()));
  const double max_act = std::max<double>(
      1, *std::max_element(act.begin() + static_cast<size_t>(l) * g * n,
                           act.begin() + static_cast<size_t>(l + 1) * g * n));
  const double max_load = std::max<double>(1, static_cast<double>(per) * load[order[0]]);
  std::vector<int32_t> dev(n, -1);
  std::vector<int> slots(g, 0);
  std::vector<int64_t> dev_load(g, 0);
  for (int e : order) {
    int best = -1;
    double best_score = 0;
    for (int d = 0; d < g; ++d) {
      if (slots[d] == per) continue;
      double with = 0;
      for (int m = 0; m < n; ++m) {
        if (dev[m] == d) with += static_cast<double>(co[static_cast<size_t>(e) * n + m]);
      }
      const double s = o.alpha * with / max_co +
                       o.beta * static_cast<double>(act[(static_cast<size_t>(l) * g + d) * n + e]) /
                           max_act -
                       o.gamma * static_cast<double>(dev_load[d]) / max_load;
      if (best < 0 || s > best_score) best = d, best_score = s;
    }
    dev[e] = best;
    ++slots[best];
    dev_load[best] += load[e];
  }
  return dev;
}

}  // namespace

absl::StatusOr<PaperSolution> SolvePaper(const TraceSet& trace, const PaperOptions& o) {
  const int g = o.num_devices, n = static_cast<int>(trace.header.num_experts);
  if (g <= 0 || n % g != 0) {
    return absl::InvalidArgumentError(absl::StrCat(g, " devices do not divide ", n, " experts"));
  }
  if (trace.num_requests() == 0) return absl::InvalidArgumentError("the trace holds no requests");
  RETURN_IF_ERROR(CheckSolverScale(trace.header.num_experts));
  const Counts k = Count(trace);
  const std::vector<int> layers(trace.header.moe_layers.begin(), trace.header.moe_layers.end());
  std::optional<PaperSolution> best;
  int64_t best_local = -1;
  for (int run = 0; run < std::max(1, o.restarts); ++run) {
    std::mt19937_64 rng(o.seed * 1000003 + run);
    // 1. Clusters; 2. scored placement and swaps for them.
    std::vector<int> device = Cluster(k, o, rng);
    std::vector<int64_t> act = DeviceActivations(k, device, g);
    std::vector<std::vector<int32_t>> device_of;
    for (int l = 0; l < k.layers; ++l) device_of.push_back(PlaceLayer(trace, k, act, l, o));
    Swaps(act, g, n, o.swaps_per_layer, rng, device_of);
    // 3. The schedule for that placement, and the swaps once more for it.
    device = Schedule(k, g, o.token_balance_eps, [&](int r, int d) {
      int64_t local = 0;
      for (int l = 0; l < k.layers; ++l) {
        for (int e = 0; e < n; ++e) local += device_of[l][e] == d ? k.at(r, l, e) : 0;
      }
      return static_cast<double>(local);
    });
    act = DeviceActivations(k, device, g);
    Swaps(act, g, n, o.swaps_per_layer, rng, device_of);
    const int64_t local = Local(act, device_of, g, n);
    if (local <= best_local) continue;
    auto placement = Placement::FromAssignment(layers, n, g, device_of);
    if (!placement.ok()) return placement.status();
    best_local = local;
    best = PaperSolution{.placement = *std::move(placement),
                         .request_device = device,
                         .lar = k.total == 0 ? 0 : static_cast<double>(local) / k.total};
  }
  return *std::move(best);
}

}  // namespace semmoe::planner
