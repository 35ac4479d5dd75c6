#include "planner/affinity/layer_affinity.h"

#include <algorithm>

namespace semmoe::planner {

int BestDevice(const trace::TraceSet& trace, const Placement& placement, int64_t t, int layer) {
  // A token touches at most top_k devices: count over its own experts only.
  std::vector<int> count(placement.num_devices(), 0);
  int best = 0;
  const uint16_t* experts = trace.Experts(t, layer);
  for (int j = 0; j < trace.top_k(); ++j) {
    const int d = placement.Device(layer, experts[j]);
    ++count[d];
    if (count[d] > count[best] || (count[d] == count[best] && d < best)) best = d;
  }
  return best;
}

LayerAffinity LayerAffinity::Build(const trace::TraceSet& trace, const Placement& placement) {
  LayerAffinity a;
  const int g = placement.num_devices();
  a.g_ = g;
  a.top_k_ = trace.top_k();
  a.counts_.assign(trace.num_layers(),
                   std::vector<std::vector<int64_t>>((g + 1) * g, std::vector<int64_t>(g, 0)));
  a.tokens_.assign(trace.num_layers(), std::vector<int64_t>((g + 1) * g, 0));
  std::vector<int> best(trace.num_layers());
  for (int64_t t = 0; t < trace.num_tokens(); ++t) {
    for (int l = 0; l < trace.num_layers(); ++l) best[l] = BestDevice(trace, placement, t, l);
    for (int l = 1; l < trace.num_layers(); ++l) {
      const int prev2 = l >= 2 ? best[l - 2] : -1;
      const int history = (prev2 + 1) * g + best[l - 1];
      ++a.tokens_[l][history];
      const uint16_t* experts = trace.Experts(t, l);
      for (int j = 0; j < trace.top_k(); ++j)
        ++a.counts_[l][history][placement.Device(l, experts[j])];
    }
  }
  return a;
}

LayerAffinity::Prediction LayerAffinity::Predict(int layer, int prev2, int prev1) const {
  const int history = (prev2 + 1) * g_ + prev1;
  const std::vector<int64_t>& row = counts_[layer][history];
  const int64_t tokens = tokens_[layer][history];
  if (tokens == 0) return {prev1, 0.0};  // Unseen history: stay put, no confidence.
  const int device = static_cast<int>(std::max_element(row.begin(), row.end()) - row.begin());
  return {device, static_cast<double>(row[device]) / (static_cast<double>(tokens) * top_k_)};
}

TransitionTable LayerAffinity::Table() const {
  TransitionTable table;
  table.num_devices = g_;
  table.layers.resize(counts_.size());
  for (size_t l = 1; l < counts_.size(); ++l) {
    table.layers[l].resize(static_cast<size_t>(g_ + 1) * g_);
    for (int prev2 = l == 1 ? -1 : 0; prev2 < g_; ++prev2) {
      for (int prev1 = 0; prev1 < g_; ++prev1) {
        const Prediction p = Predict(static_cast<int>(l), prev2, prev1);
        table.layers[l][(prev2 + 1) * g_ + prev1] = {static_cast<int16_t>(p.device),
                                                     static_cast<float>(p.confidence)};
      }
    }
  }
  return table;
}

}  // namespace semmoe::planner
