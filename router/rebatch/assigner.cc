#include "router/rebatch/assigner.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace semmoe::router {
namespace {

bool Excluded(const PendingRequest& request, int rank) {
  return std::find(request.exclude.begin(), request.exclude.end(), rank) != request.exclude.end();
}

bool Usable(const PendingRequest& request, const RankLoad& load, int rank) {
  return load.usable && !Excluded(request, rank);
}

bool KvFits(const PendingRequest& request, const RankLoad& load) {
  return load.kv_free_tokens < 0 || request.load_tokens <= load.kv_free_tokens;
}

// How clearly a request prefers its best rank (its best node, with nodes) over the next, per
// token of load.
double Decisiveness(const PendingRequest& request) {
  const std::vector<double>& fit = request.node_fit.size() >= 2 ? request.node_fit : request.fit;
  if (fit.size() < 2) return 0;
  std::vector<double> top(fit);
  std::partial_sort(top.begin(), top.begin() + 2, top.end(), std::greater<double>());
  return (top[0] - top[1]) / std::max<int64_t>(1, request.load_tokens);
}

void Take(const PendingRequest& request, RankLoad& load) {
  load.tokens_in_flight += request.load_tokens;
  if (load.kv_free_tokens >= 0) {
    load.kv_free_tokens = std::max<int64_t>(0, load.kv_free_tokens - request.load_tokens);
  }
}

}  // namespace

absl::StatusOr<Policy> ParsePolicy(absl::string_view name) {
  if (name == "semantic") return Policy::kSemantic;
  if (name == "round_robin") return Policy::kRoundRobin;
  if (name == "least_loaded") return Policy::kLeastLoaded;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown policy '", name, "' (expected semantic, round_robin or least_loaded)"));
}

const char* PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kSemantic:
      return "semantic";
    case Policy::kRoundRobin:
      return "round_robin";
    case Policy::kLeastLoaded:
      return "least_loaded";
  }
  return "?";
}

int Assigner::LeastLoaded(const PendingRequest& request, const std::vector<RankLoad>& loads) const {
  int best = -1;
  for (int r = 0; r < static_cast<int>(loads.size()); ++r) {
    if (!Usable(request, loads[r], r)) continue;
    if (best < 0 || loads[r].tokens_in_flight < loads[best].tokens_in_flight) best = r;
  }
  return best;
}

std::vector<int> Assigner::Assign(const std::vector<PendingRequest>& window,
                                  std::vector<RankLoad>& loads) {
  const int ranks = static_cast<int>(loads.size());
  std::vector<int> out(window.size(), -1);
  if (policy_ == Policy::kRoundRobin) {
    for (size_t i = 0; i < window.size(); ++i) {
      for (int tried = 0; tried < ranks; ++tried) {
        const int r = next_++ % ranks;
        if (Usable(window[i], loads[r], r)) {
          out[i] = r;
          Take(window[i], loads[r]);
          break;
        }
      }
    }
    return out;
  }
  if (policy_ == Policy::kLeastLoaded) {
    for (size_t i = 0; i < window.size(); ++i) {
      out[i] = LeastLoaded(window[i], loads);
      if (out[i] >= 0) Take(window[i], loads[out[i]]);
    }
    return out;
  }
  // Semantic: the capacity is (1 + eps) × the mean load once the window is placed, plus the
  // largest request of the window (balance is kept to within one request: an idle cluster
  // still sends a lone request where it fits best).
  int64_t total = 0, largest = 0;
  int usable = 0;
  for (const RankLoad& l : loads) {
    total += l.tokens_in_flight;
    usable += l.usable ? 1 : 0;
  }
  for (const PendingRequest& p : window) {
    total += p.load_tokens;
    largest = std::max(largest, p.load_tokens);
  }
  const double capacity = (1.0 + eps_) * static_cast<double>(total) / std::max(1, usable) +
                          static_cast<double>(largest);
  std::vector<double> decisive(window.size());
  for (size_t i = 0; i < window.size(); ++i) decisive[i] = Decisiveness(window[i]);
  std::vector<size_t> order(window.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return decisive[a] > decisive[b]; });
  for (size_t i : order) {
    const PendingRequest& p = window[i];
    int best = -1;
    auto room = [&](int r) {
      return Usable(p, loads[r], r) && KvFits(p, loads[r]) &&
             static_cast<double>(loads[r].tokens_in_flight + p.load_tokens) <= capacity;
    };
    const bool by_node = static_cast<int>(node_of_.size()) == ranks && nodes_ > 1 &&
                         static_cast<int>(p.node_fit.size()) == nodes_ &&
                         static_cast<int>(p.fit.size()) == ranks;
    if (by_node) {
      // Nodes by fit (ties: the lower node), then the best-fitting rank with room within.
      std::vector<int> nodes(nodes_);
      std::iota(nodes.begin(), nodes.end(), 0);
      std::stable_sort(nodes.begin(), nodes.end(),
                       [&](int a, int b) { return p.node_fit[a] > p.node_fit[b]; });
      for (int n : nodes) {
        for (int r = 0; r < ranks; ++r) {
          if (node_of_[r] != n || !room(r)) continue;
          if (best < 0 || p.fit[r] > p.fit[best] ||
              (p.fit[r] == p.fit[best] &&
               loads[r].tokens_in_flight < loads[best].tokens_in_flight)) {
            best = r;
          }
        }
        if (best >= 0) break;
      }
    } else if (static_cast<int>(p.fit.size()) == ranks) {
      for (int r = 0; r < ranks; ++r) {
        if (!room(r)) continue;
        if (best < 0 || p.fit[r] > p.fit[best]) best = r;
      }
    }
    if (best < 0) best = LeastLoaded(p, loads);
    out[i] = best;
    if (best >= 0) Take(p, loads[best]);
  }
  return out;
}

}  // namespace semmoe::router
