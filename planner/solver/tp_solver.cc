#include "planner/solver/tp_solver.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "common/status_macros.h"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/eval/evaluate.h"
#include "planner/eval/schedule.h"
#include "planner/solver/baselines.h"
#include "planner/solver/scale.h"

namespace semmoe::planner {

absl::StatusOr<Placement> SolveTp(const trace::TraceSet& trace, const DpSolverOptions& options) {
  const int n = static_cast<int>(trace.header.num_experts), k = trace.top_k();
  RETURN_IF_ERROR(CheckSolverScale(trace.header.num_experts));
  ASSIGN_OR_RETURN(Placement coact, CoactPlacement(trace, options.num_devices));
  std::vector<std::vector<int32_t>> device_of;
  for (int l = 0; l < trace.num_layers(); ++l) {
    // One-layer trace whose "requests" are token ids, holding every occurrence's experts.
    absl::flat_hash_map<uint32_t, int> index;
    std::vector<std::vector<uint32_t>> tokens;
    std::vector<std::vector<uint16_t>> experts;
    for (int64_t t = 0; t < trace.num_tokens(); ++t) {
      auto [it, inserted] = index.try_emplace(trace.tokens[t], static_cast<int>(tokens.size()));
      if (inserted) tokens.emplace_back(), experts.emplace_back();
      tokens[it->second].push_back(trace.tokens[t]);
      const uint16_t* e = trace.Experts(t, l);
      experts[it->second].insert(experts[it->second].end(), e, e + k);
    }
    trace::TraceSet by_id;
    by_id.header = trace.header;
    by_id.header.moe_layers = {trace.header.moe_layers[l]};
    for (size_t i = 0; i < tokens.size(); ++i) {
      RETURN_IF_ERROR(by_id.AddRequest(std::to_string(tokens[i][0]), tokens[i], experts[i]));
    }
    DpSolverOptions layer_options = options;
    layer_options.router_rounds = 0;
    layer_options.starts = kTpSeededStarts;
    // One start from the co-activation baseline: each token id where most of its activations
    // are local under coact, filled in decreasing size while capacity lasts.
    const int g = options.num_devices;
    const int64_t capacity = static_cast<int64_t>((1.0 + options.token_balance_eps) *
                                                  static_cast<double>(trace.num_tokens()) / g);
    std::vector<int64_t> load(g, 0);
    std::vector<int> order(tokens.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return tokens[a].size() > tokens[b].size(); });
    layer_options.initial_request_device.assign(tokens.size(), 0);
    for (int i : order) {
      std::vector<int64_t> local(g, 0);
      for (uint16_t e : experts[i]) ++local[coact.Device(l, e)];
      int best = -1;
      for (int d = 0; d < g; ++d) {
        if (load[d] + static_cast<int64_t>(tokens[i].size()) > capacity) continue;
        if (best < 0 || local[d] > local[best]) best = d;
      }
      if (best < 0)
        best = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      layer_options.initial_request_device[i] = best;
      load[best] += static_cast<int64_t>(tokens[i].size());
    }
    ASSIGN_OR_RETURN(DpSolution solution, SolveDp(by_id, layer_options));
    std::vector<int32_t> row(n);
    for (int e = 0; e < n; ++e) row[e] = solution.placement.Device(0, e);
    device_of.push_back(std::move(row));
  }
  const std::vector<int> moe_layers(trace.header.moe_layers.begin(), trace.header.moe_layers.end());
  ASSIGN_OR_RETURN(Placement solved,
                   Placement::FromAssignment(moe_layers, n, options.num_devices, device_of));
  // The solver optimises token ids placed whole; the engine places tokens by the SRS rule in
  // balanced chunks per batch. Per layer, keep whichever of the solved and the co-activation layout
  // gives more local activations under that rule on this trace.
  const TokenAffinity affinity = BuildTokenAffinity(trace);
  ASSIGN_OR_RETURN(Metrics solved_srs,
                   EvaluateTp(trace, solved,
                              SrsTokens(trace, affinity, solved, kSrsBatchTokens, nullptr,
                                        options.token_balance_eps)));
  ASSIGN_OR_RETURN(Metrics coact_srs, EvaluateTp(trace, coact,
                                                 SrsTokens(trace, affinity, coact, kSrsBatchTokens,
                                                           nullptr, options.token_balance_eps)));
  for (int l = 0; l < trace.num_layers() && options.expert_balance_eps < 0; ++l) {
    // (With an expert-load cap, coact's layout may break it: keep the solved one.)
    if (coact_srs.lar_per_layer[l] > solved_srs.lar_per_layer[l]) {
      for (int e = 0; e < n; ++e) device_of[l][e] = coact.Device(l, e);
    }
  }
  return Placement::FromAssignment(moe_layers, n, options.num_devices, std::move(device_of));
}

}  // namespace semmoe::planner
