// Expert compute balance: per MoE layer, expert swaps that bring every device's expert load
// (activations of the experts it holds) to at most (1 + eps) × the mean, choosing each time the
// swap that keeps most activations local.
//
// Robust to the traffic mix: with request groups (e.g. UsageClusters, requests of similar expert
// use), the cap holds for each group's load separately. A device's load under any mix of those
// groups is then within the cap too (the busiest device of a weighted sum is at most the
// weighted sum of each group's busiest), whereas a placement balanced for the profile's own mix
// drifts when the served mix differs from it (docs/PLANNER.md, "Balance").
#ifndef SEMMOE_PLANNER_SOLVER_EXPERT_BALANCE_H_
#define SEMMOE_PLANNER_SOLVER_EXPERT_BALANCE_H_

#include <cstdint>
#include <vector>

#include "planner/trace/trace_set.h"

namespace semmoe::planner {

// Requests grouped by k-means (Lloyd, seeded, 10 rounds) over their expert use, all layers,
// normalised per request. Returns a group in [0, groups) per request; groups may end empty.
std::vector<int> UsageClusters(const trace::TraceSet& trace, int groups, uint64_t seed);

struct BalanceOptions {
  int num_devices = 8;
  double eps = 0.1;
  // Per request: its group (empty: one group, the trace's own mix). Groups holding less than
  // 1 / (4 · groups) of the activations are merged into the mix: too few to balance on.
  std::vector<int> request_group;
  // Per request: its device, for the locality the swaps try to keep (DP). Empty: every request
  // counts on every device equally (the swaps then only balance).
  std::vector<int> request_device;
};

// Rewrites device_of[layer][expert] (a balanced placement: N/G experts per device). Stops early
// when no single swap lowers the busiest (group, device) load; the result is then as balanced
// as single swaps make it.
void BalanceExpertLoad(const trace::TraceSet& trace, const BalanceOptions& options,
                       std::vector<std::vector<int32_t>>& device_of);

// Max over layers and groups of (the busiest device's load / the group's mean per device).
double GroupLoadImbalance(const trace::TraceSet& trace, const std::vector<int>& request_group,
                          const std::vector<std::vector<int32_t>>& device_of, int num_devices);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SOLVER_EXPERT_BALANCE_H_
