#include "router/rebatch/assigner.h"

#include <algorithm>
#include <limits>
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

// The request's prompt (its load when the prompt is not given).
int64_t PromptTokens(const PendingRequest& request) {
  return request.prompt_tokens > 0 ? request.prompt_tokens : request.load_tokens;
}

// Whether `placed` puts every request of the window where its KV cache has room (in order).
bool KvRespected(const std::vector<PendingRequest>& window, std::vector<RankLoad> loads,
                 const std::vector<int>& placed);

void Take(const PendingRequest& request, RankLoad& load) {
  load.tokens_in_flight += request.load_tokens;
  ++load.sequences;
  load.prefill_tokens += PromptTokens(request);
  if (load.kv_free_tokens >= 0) {
    load.kv_free_tokens = std::max<int64_t>(0, load.kv_free_tokens - request.load_tokens);
  }
}

bool KvRespected(const std::vector<PendingRequest>& window, std::vector<RankLoad> loads,
                 const std::vector<int>& placed) {
  for (size_t i = 0; i < window.size(); ++i) {
    if (placed[i] < 0) continue;
    if (!KvFits(window[i], loads[placed[i]])) return false;
    Take(window[i], loads[placed[i]]);
  }
  return true;
}

}  // namespace

absl::StatusOr<Policy> ParsePolicy(absl::string_view name) {
  if (name == "semantic") return Policy::kSemantic;
  if (name == "round_robin") return Policy::kRoundRobin;
  if (name == "least_loaded") return Policy::kLeastLoaded;
  if (name == "time") return Policy::kTime;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown policy '", name, "' (expected semantic, round_robin, least_loaded or time)"));
}

const char* PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kSemantic:
      return "semantic";
    case Policy::kRoundRobin:
      return "round_robin";
    case Policy::kLeastLoaded:
      return "least_loaded";
    case Policy::kTime:
      return "time";
  }
  return "?";
}

int Assigner::LeastLoaded(const PendingRequest& request, const std::vector<RankLoad>& loads) const {
  // Among usable ranks, one whose KV cache holds the request first.
  int best = -1;
  bool best_fits = false;
  for (int r = 0; r < static_cast<int>(loads.size()); ++r) {
    if (!Usable(request, loads[r], r)) continue;
    const bool fits = KvFits(request, loads[r]);
    if (best < 0 || (fits && !best_fits) ||
        (fits == best_fits && loads[r].tokens_in_flight < loads[best].tokens_in_flight)) {
      best = r;
      best_fits = fits;
    }
  }
  return best;
}

std::vector<int> Assigner::AssignRoundRobin(const std::vector<PendingRequest>& window,
                                            std::vector<RankLoad>& loads, int& cursor) const {
  const int ranks = static_cast<int>(loads.size());
  std::vector<int> out(window.size(), -1);
  for (size_t i = 0; i < window.size(); ++i) {
    for (int tried = 0; tried < ranks; ++tried) {
      const int r = cursor++ % ranks;
      if (Usable(window[i], loads[r], r)) {
        out[i] = r;
        Take(window[i], loads[r]);
        break;
      }
    }
  }
  return out;
}

std::vector<int> Assigner::AssignLeastLoaded(const std::vector<PendingRequest>& window,
                                             std::vector<RankLoad>& loads) const {
  std::vector<int> out(window.size(), -1);
  for (size_t i = 0; i < window.size(); ++i) {
    out[i] = LeastLoaded(window[i], loads);
    if (out[i] >= 0) Take(window[i], loads[out[i]]);
  }
  return out;
}

std::vector<int> Assigner::AssignTime(const std::vector<PendingRequest>& window,
                                      std::vector<RankLoad>& loads) {
  const int ranks = static_cast<int>(loads.size());
  if (predictor_ == nullptr || predictor_->num_ranks() != ranks) {
    // No model for these ranks (a configuration error the router refuses at start): balanced.
    last_time_ = {.rule = "least_loaded"};
    return AssignLeastLoaded(window, loads);
  }
  std::vector<planner::sim::RankState> states(ranks);
  for (int r = 0; r < ranks; ++r) {
    states[r] = {.sequences = loads[r].sequences,
                 .context_tokens = loads[r].tokens_in_flight,
                 .prefill_tokens = loads[r].prefill_tokens};
  }
  std::vector<planner::sim::NewRequest> requests(window.size());
  for (size_t i = 0; i < window.size(); ++i) {
    requests[i].prompt_tokens = PromptTokens(window[i]);
    if (static_cast<int>(window[i].share.size()) == ranks) requests[i].share = window[i].share;
  }
  // The time rule: largest prompts first, each where the predicted layer is shortest.
  std::vector<RankLoad> time_loads = loads;
  std::vector<int> timed(window.size(), -1);
  std::vector<size_t> order(window.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return requests[a].prompt_tokens > requests[b].prompt_tokens;
  });
  for (size_t i : order) {
    const std::vector<double> times =
        predictor_->TimesFor(states, requests, timed, static_cast<int>(i));
    int best = -1;
    for (int r = 0; r < ranks; ++r) {
      if (!Usable(window[i], time_loads[r], r) || !KvFits(window[i], time_loads[r])) continue;
      if (best < 0 || times[r] < times[best] ||
          (times[r] == times[best] &&
           time_loads[r].tokens_in_flight < time_loads[best].tokens_in_flight)) {
        best = r;
      }
    }
    if (best < 0) best = LeastLoaded(window[i], time_loads);  // No KV room anywhere.
    timed[i] = best;
    if (best >= 0) Take(window[i], time_loads[best]);
  }
  // The vanilla rules on the same window; the fastest prediction is kept.
  std::vector<RankLoad> least_loads = loads, rr_loads = loads;
  int cursor = next_;
  const std::vector<int> least = AssignLeastLoaded(window, least_loads);
  const std::vector<int> rr = AssignRoundRobin(window, rr_loads, cursor);
  // A vanilla placement that puts a request where the KV cache has no room, when the time
  // rule's does not, is not a candidate.
  const bool kv_matters = KvRespected(window, loads, timed);
  last_time_.time_s = predictor_->LayerTime(states, requests, timed);
  last_time_.least_loaded_s = predictor_->LayerTime(states, requests, least);
  last_time_.round_robin_s = predictor_->LayerTime(states, requests, rr);
  constexpr double kOut = std::numeric_limits<double>::infinity();
  const double least_s =
      kv_matters && !KvRespected(window, loads, least) ? kOut : last_time_.least_loaded_s;
  const double rr_s =
      kv_matters && !KvRespected(window, loads, rr) ? kOut : last_time_.round_robin_s;
  const double fastest = std::min({last_time_.time_s, least_s, rr_s});
  last_time_.kept_s = fastest;
  if (least_s == fastest) {
    last_time_.rule = "least_loaded";
    loads = std::move(least_loads);
    return least;
  }
  if (rr_s == fastest) {
    next_ = cursor;  // Round-robin's cursor moves when its placement is taken.
    last_time_.rule = "round_robin";
    loads = std::move(rr_loads);
    return rr;
  }
  last_time_.rule = "time";
  loads = std::move(time_loads);
  return timed;
}

std::vector<int> Assigner::Assign(const std::vector<PendingRequest>& window,
                                  std::vector<RankLoad>& loads) {
  const int ranks = static_cast<int>(loads.size());
  std::vector<int> out(window.size(), -1);
  if (policy_ == Policy::kRoundRobin) return AssignRoundRobin(window, loads, next_);
  if (policy_ == Policy::kLeastLoaded) return AssignLeastLoaded(window, loads);
  if (policy_ == Policy::kTime) return AssignTime(window, loads);
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
