#include "planner/affinity/token_affinity.h"

namespace semmoe::planner {

TokenAffinity TokenAffinity::FromTrace(const trace::TraceSet& trace) {
  TokenAffinity a;
  const int layers = trace.num_layers(), n = trace.header.num_experts, k = trace.top_k();
  a.num_experts_ = n;
  a.marginal_.assign(layers, std::vector<float>(n, 0.0f));
  absl::flat_hash_map<uint32_t, std::vector<int64_t>> counts;
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
  return a;
}

double TokenAffinity::Probability(int layer, uint32_t token, int expert) const {
  auto it = rows_.find(token);
  if (it == rows_.end()) return marginal_[layer][expert];
  return it->second[static_cast<size_t>(layer) * num_experts_ + expert];
}

std::vector<float> TokenAffinity::DpScores(const Placement& placement, uint32_t vocab_size) const {
  const int g = placement.num_devices();
  std::vector<float> scores(static_cast<size_t>(vocab_size) * g, 0.0f);
  std::vector<float> marginal_row(g, 0.0f);
  for (int l = 0; l < num_layers(); ++l) {
    for (int e = 0; e < num_experts_; ++e) marginal_row[placement.Device(l, e)] += marginal_[l][e];
  }
  for (uint32_t v = 0; v < vocab_size; ++v) {
    float* row = &scores[static_cast<size_t>(v) * g];
    auto it = rows_.find(v);
    if (it == rows_.end()) {
      std::copy(marginal_row.begin(), marginal_row.end(), row);
      continue;
    }
    for (int l = 0; l < num_layers(); ++l) {
      for (int e = 0; e < num_experts_; ++e) {
        row[placement.Device(l, e)] += it->second[static_cast<size_t>(l) * num_experts_ + e];
      }
    }
  }
  return scores;
}

}  // namespace semmoe::planner
