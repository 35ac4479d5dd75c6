#include "planner/eval/schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace semmoe::planner {

std::vector<int> AffinityRequests(const std::vector<std::vector<uint32_t>>& prompts,
                                  const std::vector<float>& scores, int num_devices,
                                  double token_balance_eps) {
  const int g = num_devices;
  const size_t vocab = scores.size() / g;
  int64_t total_tokens = 0;
  for (const auto& p : prompts) total_tokens += static_cast<int64_t>(p.size());
  const double capacity = (1.0 + token_balance_eps) * total_tokens / g;
  std::vector<int64_t> load(g, 0);
  std::vector<double> s(g);
  std::vector<int> devices(prompts.size());
  for (size_t r = 0; r < prompts.size(); ++r) {
    std::fill(s.begin(), s.end(), 0.0);
    for (uint32_t token : prompts[r]) {
      if (token >= vocab) continue;
      const float* row = &scores[static_cast<size_t>(token) * g];
      float total = 0;
      for (int d = 0; d < g; ++d) total += row[d];
      for (int d = 0; d < g; ++d) s[d] += std::log(std::max(row[d] / total, 1e-2f));
    }
    const int64_t size = static_cast<int64_t>(prompts[r].size());
    int best = -1;
    for (int d = 0; d < g; ++d) {
      if (load[d] + size > capacity) continue;
      if (best < 0 || s[d] > s[best]) best = d;
    }
    if (best < 0) best = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    devices[r] = best;
    load[best] += size;
  }
  return devices;
}

std::vector<int> AffinityRequests(const trace::TraceSet& trace, const std::vector<float>& scores,
                                  int num_devices, double token_balance_eps) {
  std::vector<std::vector<uint32_t>> prompts(trace.num_requests());
  for (int r = 0; r < trace.num_requests(); ++r) {
    prompts[r].assign(trace.tokens.begin() + trace.request_begin[r],
                      trace.tokens.begin() + trace.request_begin[r + 1]);
  }
  return AffinityRequests(prompts, scores, num_devices, token_balance_eps);
}

std::vector<std::vector<int>> SrsTokens(const trace::TraceSet& trace,
                                        const TokenAffinity& affinity, const Placement& placement,
                                        int batch_tokens, const LayerAffinity* layer_affinity) {
  const int g = placement.num_devices(), n = placement.num_experts();
  std::vector<std::vector<int>> token_device(trace.num_layers(),
                                             std::vector<int>(trace.num_tokens()));
  std::vector<double> share(g);
  std::vector<int> predicted(batch_tokens);
  std::vector<double> confidence(batch_tokens);
  std::vector<int> order(batch_tokens), room(g);
  for (int l = 0; l < trace.num_layers(); ++l) {
    for (int64_t start = 0; start < trace.num_tokens(); start += batch_tokens) {
      const int b = static_cast<int>(std::min<int64_t>(batch_tokens, trace.num_tokens() - start));
      for (int i = 0; i < b; ++i) {
        std::fill(share.begin(), share.end(), 0.0);
        const uint32_t v = trace.tokens[start + i];
        for (int e = 0; e < n; ++e) share[placement.Device(l, e)] += affinity.Probability(l, v, e);
        predicted[i] = static_cast<int>(std::max_element(share.begin(), share.end()) -
                                        share.begin());
        // share sums to 1 per layer: it is the expected fraction of the token's experts there.
        confidence[i] = share[predicted[i]];
        if (layer_affinity != nullptr && l >= 1) {
          const int64_t t = start + i;
          const int prev1 = BestDevice(trace, placement, t, l - 1);
          const int prev2 = l >= 2 ? BestDevice(trace, placement, t, l - 2) : -1;
          const LayerAffinity::Prediction a = layer_affinity->Predict(l, prev2, prev1);
          if (a.confidence > confidence[i]) {
            predicted[i] = a.device;
            confidence[i] = a.confidence;
          }
        }
        order[i] = i;
      }
      std::stable_sort(order.begin(), order.begin() + b,
                       [&](int x, int y) { return confidence[x] > confidence[y]; });
      for (int d = 0; d < g; ++d) room[d] = b / g + (d < b % g ? 1 : 0);  // Equal chunks.
      for (int j = 0; j < b; ++j) {
        const int i = order[j];
        int d = predicted[i];
        if (room[d] == 0) d = static_cast<int>(std::max_element(room.begin(), room.end()) - room.begin());
        --room[d];
        token_device[l][start + i] = d;
      }
    }
  }
  return token_device;
}

}  // namespace semmoe::planner
