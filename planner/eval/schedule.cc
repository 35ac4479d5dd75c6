#include "planner/eval/schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "planner/affinity/prompt_scores.h"
#include "planner/placement/balanced_assign.h"

namespace semmoe::planner {

std::vector<int> AffinityRequests(const std::vector<std::vector<uint32_t>>& prompts,
                                  const std::vector<float>& scores, int num_devices,
                                  double token_balance_eps) {
  const int g = num_devices;
  int64_t total_tokens = 0;
  for (const auto& p : prompts) total_tokens += static_cast<int64_t>(p.size());
  const double capacity = (1.0 + token_balance_eps) * total_tokens / g;
  std::vector<int64_t> load(g, 0);
  std::vector<double> s(g);
  std::vector<int> devices(prompts.size());
  const std::vector<float> terms = PromptLogTerms(scores, g);
  for (size_t r = 0; r < prompts.size(); ++r) {
    SumPromptLogTerms<uint32_t>(prompts[r], terms, g, absl::MakeSpan(s));
    const int64_t size = static_cast<int64_t>(prompts[r].size());
    int best = -1;
    for (int d = 0; d < g; ++d) {
      if (load[d] + size > capacity) continue;
      if (best < 0 || s[d] > s[best]) best = d;
    }
    if (best < 0)
      best = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
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

std::vector<int> PerfectRequests(const trace::TraceSet& trace, const Placement& placement,
                                 double token_balance_eps) {
  const int g = placement.num_devices();
  const double capacity = (1.0 + token_balance_eps) * trace.num_tokens() / g;
  std::vector<int64_t> load(g, 0), local(g);
  std::vector<int> devices(trace.num_requests());
  for (int r = 0; r < trace.num_requests(); ++r) {
    std::fill(local.begin(), local.end(), 0);
    for (int64_t t = trace.request_begin[r]; t < trace.request_begin[r + 1]; ++t) {
      for (int l = 0; l < trace.num_layers(); ++l) {
        const uint16_t* chosen = trace.Experts(t, l);
        for (int k = 0; k < trace.top_k(); ++k) {
          for (int32_t d : placement.HoldersOf(l, chosen[k])) ++local[d];
        }
      }
    }
    const int64_t size = trace.request_begin[r + 1] - trace.request_begin[r];
    int best = -1;
    for (int d = 0; d < g; ++d) {
      if (load[d] + size > capacity) continue;
      if (best < 0 || local[d] > local[best]) best = d;
    }
    if (best < 0) {
      best = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    }
    devices[r] = best;
    load[best] += size;
  }
  return devices;
}

std::vector<std::vector<int>> SrsTokens(const trace::TraceSet& trace, const TokenAffinity& affinity,
                                        const Placement& placement, int batch_tokens,
                                        const LayerAffinity* layer_affinity, double slack) {
  const int g = placement.num_devices();
  std::vector<std::vector<int>> token_device(trace.num_layers(),
                                             std::vector<int>(trace.num_tokens()));
  std::vector<float> scores;
  std::vector<bool> first_of_request(trace.num_tokens(), false);
  for (int r = 0; r < trace.num_requests(); ++r) {
    if (trace.request_begin[r] < trace.num_tokens())
      first_of_request[trace.request_begin[r]] = true;
  }
  constexpr uint32_t kNoToken = 0xffffffffu;
  for (int l = 0; l < trace.num_layers(); ++l) {
    for (int64_t start = 0; start < trace.num_tokens(); start += batch_tokens) {
      const int b = static_cast<int>(std::min<int64_t>(batch_tokens, trace.num_tokens() - start));
      scores.assign(static_cast<size_t>(b) * g, 0.0f);
      for (int i = 0; i < b; ++i) {
        // The expected share of the token's experts on each device, given the token before it
        // in its request (none for a request's first token).
        float* share = &scores[static_cast<size_t>(i) * g];
        const int64_t t = start + i;
        const uint32_t prev = first_of_request[t] ? kNoToken : trace.tokens[t - 1];
        affinity.ContextShares(l, prev, trace.tokens[t], placement, share);
        if (layer_affinity != nullptr && l >= 1) {
          const int prev1 = BestDevice(trace, placement, t, l - 1);
          const int prev2 = l >= 2 ? BestDevice(trace, placement, t, l - 2) : -1;
          const LayerAffinity::Prediction a = layer_affinity->Predict(l, prev2, prev1);
          if (a.confidence > *std::max_element(share, share + g)) {
            std::fill(share, share + g, 0.0f);
            share[a.device] = static_cast<float>(a.confidence);
          }
        }
      }
      const std::vector<int32_t> device = AssignBalanced(scores, g, slack);
      for (int i = 0; i < b; ++i) token_device[l][start + i] = device[i];
    }
  }
  return token_device;
}

}  // namespace semmoe::planner
