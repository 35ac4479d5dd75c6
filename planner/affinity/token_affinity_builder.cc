#include "planner/affinity/token_affinity_builder.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace semmoe::planner {

// Fills in TokenAffinity's tables from counts (a friend of TokenAffinity).
class TokenAffinityBuilder {
 public:
  static TokenAffinity FromTrace(const trace::TraceSet& trace);
};

TokenAffinity TokenAffinityBuilder::FromTrace(const trace::TraceSet& trace) {
  TokenAffinity a;
  const int layers = trace.num_layers(), n = trace.header.num_experts, k = trace.top_k();
  a.num_experts_ = n;
  a.marginal_.assign(layers, std::vector<float>(n, 0.0f));
  absl::flat_hash_map<uint32_t, std::vector<int32_t>> counts;
  for (int64_t t = 0; t < trace.num_tokens(); ++t) {
    auto& row = counts[trace.tokens[t]];
    if (row.empty()) row.assign(static_cast<size_t>(layers) * n, 0);
    for (int l = 0; l < layers; ++l) {
      for (int j = 0; j < k; ++j) {
        const int e = trace.Experts(t, l)[j];
        ++row[static_cast<size_t>(l) * n + e];
        a.marginal_[l][e] += 1.0f;
      }
    }
  }
  for (auto& m : a.marginal_) {
    double total = 0;
    for (float v : m) total += v;
    for (float& v : m) v = total > 0 ? static_cast<float>(v / total) : 1.0f / n;
  }
  for (auto& [token, row] : counts) {
    std::vector<float> p(row.size());
    for (int l = 0; l < layers; ++l) {
      int64_t total = 0;
      for (int e = 0; e < n; ++e) total += row[static_cast<size_t>(l) * n + e];
      for (int e = 0; e < n; ++e) {
        p[static_cast<size_t>(l) * n + e] =
            static_cast<float>(static_cast<double>(row[static_cast<size_t>(l) * n + e]) / total);
      }
    }
    a.rows_.emplace(token, std::move(p));
  }
  // Previous-token contexts seen at least twice (rarer ones are noise). Counted first, so that
  // only those get a [layers × experts] row: most pairs occur once, and a row each for them
  // took gigabytes at 61 layers × 256 experts.
  absl::flat_hash_map<uint64_t, std::pair<uint32_t, std::vector<int32_t>>> pairs;
  for (int r = 0; r < trace.num_requests(); ++r) {
    for (int64_t t = trace.request_begin[r] + 1; t < trace.request_begin[r + 1]; ++t) {
      ++pairs[TokenAffinity::ContextKey(trace.tokens[t - 1], trace.tokens[t])].first;
    }
  }
  for (int r = 0; r < trace.num_requests(); ++r) {
    for (int64_t t = trace.request_begin[r] + 1; t < trace.request_begin[r + 1]; ++t) {
      auto& [seen, experts] =
          pairs[TokenAffinity::ContextKey(trace.tokens[t - 1], trace.tokens[t])];
      if (seen < TokenAffinity::kMinContextCount) continue;
      if (experts.empty()) experts.assign(static_cast<size_t>(layers) * n, 0);
      for (int l = 0; l < layers; ++l) {
        for (int j = 0; j < k; ++j) ++experts[static_cast<size_t>(l) * n + trace.Experts(t, l)[j]];
      }
    }
  }
  for (auto& [key, entry] : pairs) {
    const auto& [seen, experts] = entry;
    if (seen < TokenAffinity::kMinContextCount) continue;
    TokenAffinity::Context c{seen, {}};
    for (size_t i = 0; i < experts.size(); ++i) {
      if (experts[i] > 0) {
        c.entries.emplace_back(static_cast<uint32_t>(i),
                               static_cast<float>(static_cast<double>(experts[i]) / (seen * k)));
      }
    }
    a.contexts_.emplace(key, std::move(c));
  }
  return a;
}

TokenAffinity BuildTokenAffinity(const trace::TraceSet& trace) {
  return TokenAffinityBuilder::FromTrace(trace);
}

}  // namespace semmoe::planner
