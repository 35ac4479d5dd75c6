#include "planner/solver/dp_solver.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/eval/schedule.h"
#include "planner/solver/assignment.h"
#include "planner/solver/expert_balance.h"
#include "planner/solver/paper_placement.h"
#include "planner/solver/scale.h"

namespace semmoe::planner {
namespace {

using trace::TraceSet;

// Per request and layer, how often each expert was chosen (sparse).
struct Usage {
  struct Entry {
    int32_t expert;
    int32_t count;
  };
  std::vector<std::vector<std::vector<Entry>>> by_request;  // [request][layer] → entries
  std::vector<int64_t> tokens;                              // [request]
};

Usage CountUsage(const TraceSet& trace) {
  const int n = static_cast<int>(trace.header.num_experts);
  Usage usage;
  std::vector<int32_t> counts(n);
  for (int r = 0; r < trace.num_requests(); ++r) {
    usage.tokens.push_back(trace.request_begin[r + 1] - trace.request_begin[r]);
    std::vector<std::vector<Usage::Entry>> layers(trace.num_layers());
    for (int l = 0; l < trace.num_layers(); ++l) {
      std::fill(counts.begin(), counts.end(), 0);
      for (int64_t t = trace.request_begin[r]; t < trace.request_begin[r + 1]; ++t) {
        for (int j = 0; j < trace.top_k(); ++j) ++counts[trace.Experts(t, l)[j]];
      }
      for (int e = 0; e < n; ++e) {
        if (counts[e] > 0) layers[l].push_back({e, counts[e]});
      }
    }
    usage.by_request.push_back(std::move(layers));
  }
  return usage;
}

class DpState {
 public:
  // credit: [a · G + b], what an activation of a token on device a served by device b is worth;
  // empty: 1 on the diagonal (local), 0 elsewhere.
  DpState(const TraceSet& trace, const Usage& usage, int g, int64_t capacity,
          const std::vector<int64_t>& credit = {})
      : trace_(trace), usage_(usage), g_(g), n_(trace.header.num_experts), capacity_(capacity),
        credit_(credit) {}

  // Exact per-layer expert placement for the current request devices. Only the experts the
  // layer's requests use enter the assignment (m of them into G · min(N/G, m) slots: the whole
  // N × N problem when every expert is used); the unused ones then fill the devices' remaining
  // slots in id order. A small trace of a model with many experts (or a trace whose header
  // claims thousands) costs the Hungarian of its used experts, not of N.
  void ExpertStep() {
    const int per = n_ / g_;
    device_of_.assign(trace_.num_layers(), std::vector<int32_t>(n_));
    // Kept between calls: at 256 experts `slots` is 512 KiB, and a fresh one per call cost the
    // solver a page fault per 4 KiB (a third of its time at DeepSeek-V3 scale).
    std::vector<double>& w = expert_weight_;
    std::vector<double>& slots = slot_weight_;
    w.resize(static_cast<size_t>(n_) * g_);
    std::vector<int> used;
    std::vector<int> filled(g_);
    for (int l = 0; l < trace_.num_layers(); ++l) {
      std::fill(w.begin(), w.end(), 0.0);
      for (size_t r = 0; r < request_device_.size(); ++r) {
        for (const auto& [e, c] : usage_.by_request[r][l]) w[e * g_ + request_device_[r]] += c;
      }
      if (!credit_.empty()) Spread(w.data(), n_);  // From the tokens' devices to every holder.
      used.clear();
      for (int e = 0; e < n_; ++e) {
        for (int d = 0; d < g_; ++d) {
          if (w[e * g_ + d] > 0) {
            used.push_back(e);
            break;
          }
        }
      }
      const int m = static_cast<int>(used.size());
      const int slots_per = std::min(per, std::max(m, 1));  // A device's slots in the problem.
      const int k = g_ * slots_per;                          // ≥ m; = N when every expert is used.
      slots.assign(static_cast<size_t>(k) * k, 0.0);         // Rows ≥ m: no expert.
      for (int i = 0; i < m; ++i) {
        for (int s = 0; s < k; ++s) {
          slots[static_cast<size_t>(i) * k + s] = w[used[i] * g_ + s / slots_per];
        }
      }
      const std::vector<int> column = MaxWeightAssignment(slots, k);
      std::fill(filled.begin(), filled.end(), 0);
      std::vector<int32_t>& device = device_of_[l];
      std::fill(device.begin(), device.end(), -1);
      for (int i = 0; i < m; ++i) {
        device[used[i]] = column[i] / slots_per;
        ++filled[device[used[i]]];
      }
      for (int e = 0, d = 0; e < n_; ++e) {
        if (device[e] >= 0) continue;
        while (filled[d] == per) ++d;
        device[e] = d;
        ++filled[d];
      }
    }
  }

  // Local activations of request r on device d under the current placement (credited).
  int64_t Score(int r, int d) const {
    int64_t s = 0;
    for (int l = 0; l < trace_.num_layers(); ++l) {
      for (const auto& [e, c] : usage_.by_request[r][l]) {
        s += credit_.empty() ? (device_of_[l][e] == d ? c : 0)
                             : c * credit_[static_cast<size_t>(d) * g_ + device_of_[l][e]];
      }
    }
    return s;
  }

  // rows[i · G + a] (counts by the token's device a) → Σ_a rows[i · G + a] · credit(a, b) at
  // [i · G + b], for `count` rows. Credit is symmetric (a topology's).
  template <typename T>
  void Spread(T* rows, int count) const {
    std::vector<T> row(g_);
    for (int i = 0; i < count; ++i) {
      T* x = rows + static_cast<size_t>(i) * g_;
      std::fill(row.begin(), row.end(), T(0));
      for (int a = 0; a < g_; ++a) {
        if (x[a] == 0) continue;
        for (int b = 0; b < g_; ++b) row[b] += x[a] * credit_[static_cast<size_t>(a) * g_ + b];
      }
      std::copy(row.begin(), row.end(), x);
    }
  }

  // Improving moves and swaps under the token capacity, until none is left. Returns whether
  // anything changed.
  bool DataStep() {
    const int requests = static_cast<int>(request_device_.size());
    std::vector<int64_t>& flat = score_;
    flat.resize(static_cast<size_t>(requests) * g_);
    auto score = [&](int r) { return flat.data() + static_cast<size_t>(r) * g_; };
    std::fill(flat.begin(), flat.end(), 0);
    for (int r = 0; r < requests; ++r) {  // Score(r, d) for every d in one pass.
      int64_t* row = score(r);
      for (int l = 0; l < trace_.num_layers(); ++l) {
        for (const auto& [e, c] : usage_.by_request[r][l]) row[device_of_[l][e]] += c;
      }
      if (!credit_.empty()) Spread(row, 1);
    }
    std::vector<int64_t> load(g_, 0);
    // Each device's requests (and each request's slot there), so that a swap looks only at the
    // target device's requests: with token ids as requests (tp_solver.h) there are tens of
    // thousands of them.
    std::vector<std::vector<int>> members(g_);
    std::vector<int> slot(requests);
    for (int r = 0; r < requests; ++r) {
      load[request_device_[r]] += usage_.tokens[r];
      slot[r] = static_cast<int>(members[request_device_[r]].size());
      members[request_device_[r]].push_back(r);
    }
    auto move = [&](int r, int to) {
      std::vector<int>& from = members[request_device_[r]];
      from[slot[r]] = from.back();
      slot[from.back()] = slot[r];
      from.pop_back();
      slot[r] = static_cast<int>(members[to].size());
      members[to].push_back(r);
      request_device_[r] = to;
    };
    bool changed = false;
    for (bool improved = true; improved;) {
      improved = false;
      for (int r = 0; r < requests; ++r) {
        const int from = request_device_[r];
        const int64_t size = usage_.tokens[r];
        for (int to = 0; to < g_; ++to) {
          const int64_t gain = score(r)[to] - score(r)[from];
          if (to == from || gain <= 0) continue;
          if (load[to] + size <= capacity_) {
            load[to] += size, load[from] -= size;
            move(r, to);
            improved = changed = true;
            break;
          }
          // Swap with the request on `to` whose move back costs least and fits.
          int best_q = -1;
          int64_t best_gain = 0;
          for (int q : members[to]) {
            const int64_t total = gain + score(q)[from] - score(q)[to];
            // Ties to the lowest index, whatever the order of `members`.
            if ((total > best_gain || (total == best_gain && best_q >= 0 && q < best_q)) &&
                load[to] + size - usage_.tokens[q] <= capacity_ &&
                load[from] - size + usage_.tokens[q] <= capacity_) {
              best_gain = total, best_q = q;
            }
          }
          if (best_q >= 0) {
            const int64_t qsize = usage_.tokens[best_q];
            load[to] += size - qsize, load[from] += qsize - size;
            move(r, to);
            move(best_q, from);
            improved = changed = true;
            break;
          }
        }
      }
    }
    return changed;
  }

  // Activations on their token's own device (uncredited).
  int64_t LocalActivations() const {
    int64_t total = 0;
    for (size_t r = 0; r < request_device_.size(); ++r) {
      for (int l = 0; l < trace_.num_layers(); ++l) {
        for (const auto& [e, c] : usage_.by_request[r][l]) {
          if (device_of_[l][e] == request_device_[r]) total += c;
        }
      }
    }
    return total;
  }

  int64_t Objective() const {
    int64_t total = 0;
    for (size_t r = 0; r < request_device_.size(); ++r) total += Score(r, request_device_[r]);
    return total;
  }

  std::vector<int> request_device_;
  std::vector<std::vector<int32_t>> device_of_;

 private:
  std::vector<double> expert_weight_, slot_weight_;  // ExpertStep's buffers.
  std::vector<int64_t> score_;                       // DataStep's [request][device] scores.
  const TraceSet& trace_;
  const Usage& usage_;
  const int g_;
  const int n_;
  const int64_t capacity_;
  const std::vector<int64_t> credit_;  // G × G (a copy: small).
};

}  // namespace

std::vector<int64_t> TopologyCredit(const Topology& topology, double node_weight) {
  const int g = topology.num_ranks();
  std::vector<int64_t> credit(static_cast<size_t>(g) * g, 0);
  double cheapest = topology.MaxCost();  // The cheapest link between two ranks.
  for (int a = 0; a < g; ++a) {
    for (int b = 0; b < g; ++b) {
      if (a != b) cheapest = std::min(cheapest, topology.Cost(a, b));
    }
  }
  const double span = topology.MaxCost() - cheapest;
  for (int a = 0; a < g; ++a) {
    for (int b = 0; b < g; ++b) {
      credit[static_cast<size_t>(a) * g + b] =
          a == b ? kCreditScale
          : span <= 0 ? 0
                      : std::llround(kCreditScale * node_weight *
                                     (topology.MaxCost() - topology.Cost(a, b)) / span);
    }
  }
  return credit;
}

absl::StatusOr<DpSolution> SolveDp(const TraceSet& trace, const DpSolverOptions& options) {
  const int g = options.num_devices;
  const int n = static_cast<int>(trace.header.num_experts);
  if (g <= 0 || n % g != 0) {
    return absl::InvalidArgumentError(absl::StrCat(g, " devices do not divide ", n, " experts"));
  }
  if (trace.num_requests() == 0) return absl::InvalidArgumentError("empty trace");
  RETURN_IF_ERROR(CheckSolverScale(trace.header.num_experts));
  if (!options.credit.empty() && options.credit.size() != static_cast<size_t>(g) * g) {
    return absl::InvalidArgumentError(absl::StrCat("credit has ", options.credit.size(),
                                                   " entries, not ", g, " × ", g));
  }
  const Usage usage = CountUsage(trace);
  const int64_t total_tokens = trace.num_tokens();
  const int64_t capacity = static_cast<int64_t>((1.0 + options.token_balance_eps) *
                                                static_cast<double>(total_tokens) / g);
  for (int r = 0; r < trace.num_requests(); ++r) {
    if (usage.tokens[r] > capacity) {
      return absl::InvalidArgumentError(absl::StrCat(
          "request '", trace.request_names[r], "' (", usage.tokens[r],
          " tokens) exceeds a device's token capacity ", capacity, "; raise the balance epsilon"));
    }
  }
  std::vector<int> moe_layers(trace.header.moe_layers.begin(), trace.header.moe_layers.end());
  std::mt19937_64 rng(options.seed);
  DpSolution best{*Placement::Vanilla(moe_layers, n, g), {}, -1, 0, 0};
  std::vector<int> initial = options.initial_request_device;
  if (initial.empty() && options.paper_start) {
    ASSIGN_OR_RETURN(PaperSolution paper,
                     SolvePaper(trace, {.num_devices = g,
                                        .token_balance_eps = options.token_balance_eps,
                                        .seed = options.seed}));
    initial = std::move(paper.request_device);
  }
  const bool given_start = !initial.empty();
  if (given_start && static_cast<int>(initial.size()) != trace.num_requests()) {
    return absl::InvalidArgumentError("initial_request_device needs one device per request");
  }
  for (int start = given_start ? -1 : 0; start < std::max(1, options.starts); ++start) {
    DpState state(trace, usage, g, capacity, options.credit);
    if (start < 0) {
      state.request_device_ = initial;
    } else {
      // Start: requests in a random order, each to the least-loaded device (balanced).
      std::vector<int> order(trace.num_requests());
      std::iota(order.begin(), order.end(), 0);
      for (int i = static_cast<int>(order.size()) - 1; i > 0; --i) {
        std::swap(order[i], order[rng() % (i + 1)]);
      }
      state.request_device_.assign(trace.num_requests(), 0);
      std::vector<int64_t> load(g, 0);
      for (int r : order) {
        const int d = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
        state.request_device_[r] = d;
        load[d] += usage.tokens[r];
      }
    }
    int rounds = 0;
    for (; rounds < options.max_rounds; ++rounds) {
      state.ExpertStep();
      if (!state.DataStep() && rounds > 0) break;
    }
    state.ExpertStep();  // Placement matching the final data assignment.
    const int64_t objective = state.Objective();
    if (objective > best.local_activations) {
      ASSIGN_OR_RETURN(best.placement,
                       Placement::FromAssignment(moe_layers, n, g, state.device_of_));
      best.request_device = state.request_device_;
      best.local_activations = objective;
      best.rounds = rounds;
    }
  }
  if (options.router_rounds > 0) {
    const TokenAffinity affinity = BuildTokenAffinity(trace);
    uint32_t vocab = 0;
    for (uint32_t t : trace.tokens) vocab = std::max(vocab, t + 1);
    DpState state(trace, usage, g, capacity, options.credit);
    Placement placement = best.placement;
    int64_t best_router = -1;
    for (int round = 0; round < options.router_rounds; ++round) {
      state.request_device_ = AffinityRequests(trace, affinity.DpScores(placement, vocab), g,
                                               options.token_balance_eps);
      state.device_of_.assign(trace.num_layers(), std::vector<int32_t>(n));
      for (int l = 0; l < trace.num_layers(); ++l) {
        for (int e = 0; e < n; ++e) state.device_of_[l][e] = placement.Device(l, e);
      }
      const int64_t objective = state.Objective();
      if (objective > best_router) {
        best_router = objective;
        best.placement = placement;
        best.request_device = state.request_device_;
        best.local_activations = objective;
      }
      state.ExpertStep();
      ASSIGN_OR_RETURN(placement, Placement::FromAssignment(moe_layers, n, g, state.device_of_));
    }
  }
  if (options.expert_balance_eps >= 0) {
    DpState state(trace, usage, g, capacity, options.credit);
    state.request_device_ = best.request_device;
    state.device_of_.assign(trace.num_layers(), std::vector<int32_t>(n));
    for (int l = 0; l < trace.num_layers(); ++l) {
      for (int e = 0; e < n; ++e) state.device_of_[l][e] = best.placement.Device(l, e);
    }
    BalanceExpertLoad(trace,
                      {.num_devices = g,
                       .eps = options.expert_balance_eps,
                       .request_group = UsageClusters(trace, options.balance_groups, options.seed),
                       .request_device = best.request_device},
                      state.device_of_);
    ASSIGN_OR_RETURN(best.placement, Placement::FromAssignment(moe_layers, n, g, state.device_of_));
    best.local_activations = state.Objective();
  }
  if (!options.credit.empty()) {  // The objective was credited; the LAR counts local ones only.
    DpState plain(trace, usage, g, capacity);
    plain.request_device_ = best.request_device;
    plain.device_of_.assign(trace.num_layers(), std::vector<int32_t>(n));
    for (int l = 0; l < trace.num_layers(); ++l) {
      for (int e = 0; e < n; ++e) plain.device_of_[l][e] = best.placement.Device(l, e);
    }
    best.local_activations = plain.LocalActivations();
  }
  const int64_t activations = trace.num_tokens() * trace.num_layers() * trace.top_k();
  best.lar = static_cast<double>(best.local_activations) / activations;
  return best;
}

absl::StatusOr<double> OfflineScheduleLar(const TraceSet& trace, const Placement& placement,
                                          std::vector<int> request_device,
                                          double token_balance_eps) {
  const int g = placement.num_devices();
  const int n = static_cast<int>(trace.header.num_experts);
  if (placement.num_layers() != trace.num_layers() || placement.num_experts() != n) {
    return absl::InvalidArgumentError("placement does not match the trace's layers and experts");
  }
  if (placement.replicas_per_device() > 0) {
    return absl::InvalidArgumentError(
        "the offline schedule counts home experts only, not replicas");
  }
  if (static_cast<int>(request_device.size()) != trace.num_requests()) {
    return absl::InvalidArgumentError("request_device needs one device per request");
  }
  for (int d : request_device) {
    if (d < 0 || d >= g) return absl::InvalidArgumentError(absl::StrCat("device ", d, " of ", g));
  }
  if (trace.num_tokens() == 0) return 0.0;
  const Usage usage = CountUsage(trace);
  const int64_t capacity =
      static_cast<int64_t>((1.0 + token_balance_eps) * static_cast<double>(trace.num_tokens()) / g);
  DpState state(trace, usage, g, capacity);
  state.request_device_ = std::move(request_device);
  state.device_of_.assign(trace.num_layers(), std::vector<int32_t>(n));
  for (int l = 0; l < trace.num_layers(); ++l) {
    for (int e = 0; e < n; ++e) state.device_of_[l][e] = placement.Device(l, e);
  }
  state.DataStep();
  return static_cast<double>(state.Objective()) /
         static_cast<double>(trace.num_tokens() * trace.num_layers() * trace.top_k());
}

}  // namespace semmoe::planner
