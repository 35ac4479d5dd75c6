#include "planner/sim/synthetic_router.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace semmoe::planner::sim {
namespace {

// An index drawn in proportion to exp(log_weight), over those not in `except`: relative to the
// largest of them, so that weights too small for a double (exp(-1000)) still draw. `u` in [0, 1).
int DrawExcept(const std::vector<double>& log_weight, const std::vector<int>& except, double u) {
  const int n = static_cast<int>(log_weight.size());
  auto excluded = [&](int x) { return std::find(except.begin(), except.end(), x) != except.end(); };
  double top = -std::numeric_limits<double>::infinity();
  for (int x = 0; x < n; ++x) {
    if (!excluded(x)) top = std::max(top, log_weight[x]);
  }
  double total = 0;
  for (int x = 0; x < n; ++x) {
    if (!excluded(x)) total += std::exp(log_weight[x] - top);
  }
  double at = 0, target = u * total;
  int last = -1;
  for (int x = 0; x < n; ++x) {
    if (excluded(x)) continue;
    last = x;
    at += std::exp(log_weight[x] - top);
    if (target < at) return x;
  }
  return last;
}

// Group-limited draws: the weights (base, plus the extras' bonuses) of every expert, `top`
// groups drawn without replacement in proportion to their weight, then K experts from those
// groups the same way (Plackett-Luce within the allowed experts).
template <typename Extras>
void DrawGrouped(const std::vector<double>& base, const Extras& extras, int groups, int top, int k,
                 std::mt19937_64& rng, std::vector<double>& w, std::vector<double>& gw,
                 std::vector<int>& chosen) {
  const int n = static_cast<int>(base.size()), per = n / groups;
  w = base;
  for (const auto& x : extras) w[x.expert] += x.extra;
  gw.assign(groups, 0);
  for (int e = 0; e < n; ++e) gw[e / per] += w[e];
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  // One index drawn in proportion to `v` (the drawn ones zeroed by the caller).
  auto draw = [&](const std::vector<double>& v, int from, int to) {
    double total = 0;
    for (int i = from; i < to; ++i) total += v[i];
    double u = uniform(rng) * total, at = 0;
    int last = -1;
    for (int i = from; i < to; ++i) {
      if (v[i] <= 0) continue;
      last = i;
      at += v[i];
      if (u < at) return i;
    }
    return last;
  };
  std::vector<char> allowed(groups, 0);
  for (int t = 0; t < top; ++t) {
    const int g = draw(gw, 0, groups);
    if (g < 0) break;
    allowed[g] = 1;
    gw[g] = 0;
  }
  for (int e = 0; e < n; ++e) {
    if (!allowed[e / per]) w[e] = 0;
  }
  chosen.clear();
  while (static_cast<int>(chosen.size()) < k) {
    const int e = draw(w, 0, n);
    if (e < 0) break;  // Weights underflowed to zero: cannot happen for bonuses ≤ e^600.
    chosen.push_back(e);
    w[e] = 0;
  }
  for (int e = 0; static_cast<int>(chosen.size()) < k && e < n; ++e) {  // Never short.
    if (allowed[e / per] && std::find(chosen.begin(), chosen.end(), e) == chosen.end()) {
      chosen.push_back(e);
    }
  }
}

uint64_t Mix(uint64_t x) {  // splitmix64's finaliser.
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

absl::StatusOr<trace::TraceSet> GenerateRouting(const trace::TraceSet& source,
                                                const std::vector<int>& domain_of_request,
                                                const SyntheticShape& shape,
                                                const SyntheticParams& p, uint64_t seed) {
  const int layers = shape.layers, n = shape.experts, k = shape.top_k;
  if (layers <= 0 || n <= 0 || n > 65536 || k <= 0 || k > n || shape.vocab == 0) {
    return absl::InvalidArgumentError(absl::StrCat("synthetic shape: ", layers, " layers, ", n,
                                                   " experts, top-", k, ", vocabulary ",
                                                   shape.vocab, " is out of range"));
  }
  if (!domain_of_request.empty() &&
      static_cast<int>(domain_of_request.size()) != source.num_requests()) {
    return absl::InvalidArgumentError("one domain per source request");
  }
  for (double v : {p.popularity_skew, p.token_bias, p.domain_bias, p.layer_bias}) {
    if (!std::isfinite(v) || v < 0 || v > kMaxSyntheticParam) {
      return absl::InvalidArgumentError(
          absl::StrCat("synthetic parameters (skew, token, domain, layer) must be from 0 to ",
                       kMaxSyntheticParam, "; got ", p.popularity_skew, ",", p.token_bias, ",",
                       p.domain_bias, ",", p.layer_bias));
    }
  }
  if (p.groups != 0 || p.top_groups != 0) {
    if (p.groups <= 0 || n % p.groups != 0 || p.top_groups <= 0 || p.top_groups > p.groups ||
        int64_t{p.top_groups} * (n / p.groups) < k) {
      return absl::InvalidArgumentError(
          absl::StrCat("group-limited routing: ", p.groups, " groups, top ", p.top_groups,
                       " of them, for ", n, " experts and top-", k,
                       " (the groups must divide the experts and the top groups hold "
                       "at least top-k of them)"));
    }
  }
  std::mt19937_64 rng(seed);
  // Per layer: log popularity over a random order; the map of the previous layer's experts.
  std::vector<std::vector<double>> logpop(layers, std::vector<double>(n));
  std::vector<std::vector<int>> follow(layers, std::vector<int>(n));
  for (int l = 0; l < layers; ++l) {
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (int r = 0; r < n; ++r) logpop[l][order[r]] = -p.popularity_skew * std::log(r + 1.0);
    std::iota(follow[l].begin(), follow[l].end(), 0);
    std::shuffle(follow[l].begin(), follow[l].end(), rng);
  }
  // Per (domain, layer): E/8 experts (at least one).
  int domains = 0;
  for (int d : domain_of_request) domains = std::max(domains, d + 1);
  if (domain_of_request.empty()) domains = source.num_requests();
  const int per_domain = std::max(1, n / 8);
  std::vector<std::vector<int>> domain_experts(int64_t{domains} * layers);
  for (auto& set : domain_experts) {
    for (int i = 0; i < per_domain; ++i) set.push_back(static_cast<int>(rng() % n));
  }

  trace::TraceSet out;
  out.header.num_experts = n;
  out.header.top_k = k;
  out.header.vocab_size = shape.vocab;
  out.header.has_weights = false;
  for (int l = 0; l < layers; ++l) out.header.moe_layers.push_back(l);
  const uint32_t source_vocab =
      source.tokens.empty() ? 0 : *std::max_element(source.tokens.begin(), source.tokens.end()) + 1;
  // Per layer the base weights (popularity) and their cumulative sums, to draw from.
  std::vector<std::vector<double>> base(layers, std::vector<double>(n)), cdf(layers);
  std::vector<double> base_total(layers, 0);
  for (int l = 0; l < layers; ++l) {
    double sum = 0;
    for (int e = 0; e < n; ++e) {
      base[l][e] = std::exp(logpop[l][e]);
      sum += base[l][e];
      cdf[l].push_back(sum);
    }
    base_total[l] = sum;
  }
  // An expert's weight is base · exp(its bonuses); the few experts with a bonus are kept apart
  // with their extra weight base · (exp(bonus) − 1).
  struct Extra {
    int expert;
    double bonus, extra;
  };
  std::vector<Extra> extras;
  std::vector<int> prev(k), chosen;
  std::vector<double> weights, group_weight;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  auto add_bonus = [&](int e, double b) {
    for (Extra& x : extras) {
      if (x.expert == e) {
        x.bonus += b;
        return;
      }
    }
    extras.push_back({e, b, 0});
  };
  for (int r = 0; r < source.num_requests(); ++r) {
    const int d = domain_of_request.empty() ? r : domain_of_request[r];
    std::vector<uint32_t> ids;
    std::vector<uint16_t> experts;
    for (int64_t t = source.request_begin[r]; t < source.request_begin[r + 1]; ++t) {
      uint32_t id = source.tokens[t];
      if (shape.vocab != source_vocab) {  // Spread over (or folded into) the target vocabulary.
        id = static_cast<uint32_t>((uint64_t{id} * 2654435761ULL) % shape.vocab);
      }
      ids.push_back(id);
      for (int l = 0; l < layers; ++l) {
        extras.clear();
        if (p.token_bias > 0) {
          for (int j = 0; j < k; ++j) {
            add_bonus(
                static_cast<int>(Mix(seed ^ (uint64_t{id} << 20) ^ (uint64_t(l) << 8) ^ j) % n),
                p.token_bias);
          }
        }
        if (p.domain_bias > 0) {
          for (int e : domain_experts[int64_t{d} * layers + l]) add_bonus(e, p.domain_bias);
        }
        if (l > 0 && p.layer_bias > 0) {
          for (int e : prev) add_bonus(follow[l][e], p.layer_bias);
        }
        // A bonus past e^600 changes nothing that can be sampled; capped so the sum of extras
        // stays finite.
        for (Extra& x : extras) x.extra = base[l][x.expert] * std::expm1(std::min(x.bonus, 600.0));
        if (p.groups > 0) {
          DrawGrouped(base[l], extras, p.groups, p.top_groups, k, rng, weights, group_weight,
                      chosen);
          for (int j = 0; j < k; ++j) {
            experts.push_back(static_cast<uint16_t>(chosen[j]));
            prev[j] = chosen[j];
          }
          continue;
        }
        // K draws without replacement, each in proportion to the weights left (Plackett-Luce:
        // the same law as the top K of score + Gumbel noise).
        chosen.clear();
        double taken_base = 0;
        while (static_cast<int>(chosen.size()) < k) {
          double extra_left = 0;
          for (const Extra& x : extras) extra_left += x.extra;
          const double u = uniform(rng) * (base_total[l] - taken_base + extra_left);
          int e = -1;
          if (u < extra_left) {
            double at = 0;
            for (const Extra& x : extras) {
              at += x.extra;
              if (u < at) {
                e = x.expert;
                break;
              }
            }
            if (e < 0) e = extras.back().expert;
          } else {
            // From the base weights, again while it lands on an expert already drawn; when the
            // drawn ones hold nearly all the weight (a steep skew) that could take forever, so
            // after a few tries the draw is made over the rest directly (the same law).
            auto drawn = [&](int x) {
              return std::find(chosen.begin(), chosen.end(), x) != chosen.end();
            };
            for (int tries = 0; tries < 32 && (e < 0 || drawn(e)); ++tries) {
              const double v = uniform(rng) * base_total[l];
              e = static_cast<int>(std::upper_bound(cdf[l].begin(), cdf[l].end(), v) -
                                   cdf[l].begin());
              e = std::min(e, n - 1);
            }
            if (drawn(e)) e = DrawExcept(logpop[l], chosen, uniform(rng));
          }
          chosen.push_back(e);
          taken_base += base[l][e];
          for (Extra& x : extras) {
            if (x.expert == e) x.extra = 0;
          }
        }
        for (int j = 0; j < k; ++j) {
          experts.push_back(static_cast<uint16_t>(chosen[j]));
          prev[j] = chosen[j];
        }
      }
    }
    RETURN_IF_ERROR(out.AddRequest(source.request_names[r], ids, experts));
  }
  return out;
}

absl::StatusOr<SyntheticParams> FitSynthetic(const trace::TraceSet& source,
                                             const std::vector<int>& domain_of_request,
                                             const SyntheticShape& shape,
                                             const RoutingStats& target, uint64_t seed,
                                             SyntheticParams start, int max_requests) {
  // A cut of the source (its first requests) and of the layers, for speed.
  trace::TraceSet cut;
  cut.header = source.header;
  std::vector<int> domains;
  for (int r = 0; r < std::min(source.num_requests(), max_requests); ++r) {
    RETURN_IF_ERROR(cut.CopyRequest(source, r));
    if (!domain_of_request.empty()) domains.push_back(domain_of_request[r]);
  }
  SyntheticShape small = shape;
  small.layers = std::min(shape.layers, 8);
  auto error = [&](const SyntheticParams& p) -> absl::StatusOr<double> {
    ASSIGN_OR_RETURN(trace::TraceSet t, GenerateRouting(cut, domains, small, p, seed));
    const RoutingStats s = MeasureRouting(t);
    const double d[] = {s.popularity_cv - target.popularity_cv, s.token_lift - target.token_lift,
                        s.request_lift - target.request_lift, s.layer_lift - target.layer_lift};
    double e = 0;
    for (double x : d) e += x * x;
    return e;
  };
  SyntheticParams best = start;
  ASSIGN_OR_RETURN(double best_error, error(best));
  double* fields[] = {&best.popularity_skew, &best.token_bias, &best.domain_bias, &best.layer_bias};
  for (double step : {2.0, 1.0, 0.5, 0.2}) {
    for (int round = 0; round < 3; ++round) {
      bool moved = false;
      for (double* f : fields) {
        for (double delta : {step, -step}) {
          const double before = *f;
          *f = std::max(0.0, before + delta);
          ASSIGN_OR_RETURN(double e, error(best));
          if (e < best_error - 1e-12) {
            best_error = e, moved = true;
          } else {
            *f = before;
          }
        }
      }
      if (!moved) break;
    }
  }
  return best;
}

}  // namespace semmoe::planner::sim
