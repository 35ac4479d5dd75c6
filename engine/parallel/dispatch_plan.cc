#include "engine/parallel/dispatch_plan.h"

#include <algorithm>

namespace semmoe::engine {

namespace {

// The device serving each activation ([tokens × k]): the rank's own when it holds the expert, else
// the choice's next holder with shares left (the home without a choice).
std::vector<int32_t> ServedBy(const planner::Placement& placement, int moe_index, int rank,
                              absl::Span<const int32_t> ids, const planner::HolderChoice* choice) {
  std::vector<std::vector<int32_t>> left(choice != nullptr ? placement.num_experts() : 0);
  auto serving = [&](int e) -> int {
    if (choice == nullptr || placement.Holds(moe_index, rank, e)) {
      return placement.Serving(moe_index, e, rank);
    }
    std::vector<int32_t>& shares = left[e];
    if (shares.empty())
      shares.assign(choice->Shares(rank, e).begin(), choice->Shares(rank, e).end());
    for (size_t h = 0; h < shares.size(); ++h) {
      if (shares[h] > 0) {
        --shares[h];
        return placement.HoldersOf(moe_index, e)[h];
      }
    }
    return placement.Device(moe_index, e);
  };
  std::vector<int32_t> served_by(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) served_by[i] = serving(ids[i]);
  return served_by;
}

}  // namespace

std::vector<int64_t> DispatchRows(const planner::Placement& placement, int moe_index, int rank,
                                  int top_k, absl::Span<const int32_t> ids,
                                  const planner::HolderChoice* choice) {
  const int g = placement.num_devices(), k = top_k;
  const int64_t tokens = k > 0 ? static_cast<int64_t>(ids.size()) / k : 0;
  const std::vector<int32_t> served_by = ServedBy(placement, moe_index, rank, ids, choice);
  std::vector<int64_t> rows(g, 0);
  std::vector<int64_t> last(g, -1);  // The last token counted for each device.
  for (int64_t t = 0; t < tokens; ++t) {
    for (int j = 0; j < k; ++j) {
      const int d = served_by[t * k + j];
      if (last[d] != t) {
        last[d] = t;
        ++rows[d];
      }
    }
  }
  return rows;
}

DispatchPlan PlanDispatch(const planner::Placement& placement, int moe_index, int rank, int top_k,
                          absl::Span<const int32_t> ids, absl::Span<const float> weights,
                          const planner::HolderChoice* choice) {
  const int g = placement.num_devices(), k = top_k;
  const int64_t tokens = k > 0 ? static_cast<int64_t>(ids.size()) / k : 0;
  DispatchPlan plan;
  plan.served_elsewhere = placement.num_experts();
  plan.top_k = k;
  plan.send_rows.assign(g, 0);
  plan.local_per_token.assign(tokens, 0);
  plan.home_device.assign(tokens, 0);

  const std::vector<int32_t> served_by = ServedBy(placement, moe_index, rank, ids, choice);
  std::vector<std::vector<int32_t>> to(g);
  std::vector<int> sent(g), homes(g);
  for (int64_t t = 0; t < tokens; ++t) {
    std::fill(sent.begin(), sent.end(), 0);
    std::fill(homes.begin(), homes.end(), 0);
    for (int j = 0; j < k; ++j) {
      const int e = ids[t * k + j];
      const int d = served_by[t * k + j];
      if (sent[d]++ == 0) to[d].push_back(static_cast<int32_t>(t));
      ++(d == rank ? plan.local_activations : plan.remote_activations);
      plan.local_per_token[t] += d == rank;
      ++homes[placement.Device(moe_index, e)];
    }
    plan.home_device[t] =
        static_cast<int32_t>(std::max_element(homes.begin(), homes.end()) - homes.begin());
  }

  int64_t rows = 0;
  for (int d = 0; d < g; ++d) rows += static_cast<int64_t>(to[d].size());
  plan.send_index.reserve(rows);
  plan.send_ids.reserve(rows * k);
  plan.send_weights.reserve(rows * k);
  for (int d = 0; d < g; ++d) {
    plan.send_rows[d] = static_cast<int64_t>(to[d].size());
    for (int32_t t : to[d]) {
      plan.send_index.push_back(t);
      for (int j = 0; j < k; ++j) {
        const int32_t e = ids[t * k + j];
        plan.send_ids.push_back(served_by[t * k + j] == d ? e : plan.served_elsewhere);
        plan.send_weights.push_back(weights[t * k + j]);
      }
    }
  }
  return plan;
}

int64_t DispatchRowBytes(int hidden, int top_k) {
  return int64_t{hidden} * 4 + int64_t{top_k} * (4 + 4);
}

int64_t CombineRowBytes(int hidden) { return int64_t{hidden} * 4; }

void CountExchange(const DispatchPlan& plan, absl::Span<const int64_t> recv_rows, int rank,
                   int hidden, MoeLayerCounters& counters, const planner::Topology* topology) {
  counters.tokens += static_cast<int64_t>(plan.local_per_token.size());
  counters.local_activations += plan.local_activations;
  counters.remote_activations += plan.remote_activations;
  const int64_t dispatch = DispatchRowBytes(hidden, plan.top_k), combine = CombineRowBytes(hidden);
  counters.bytes_to_peer.resize(plan.send_rows.size(), 0);
  for (size_t r = 0; r < plan.send_rows.size(); ++r) {
    if (static_cast<int>(r) == rank) continue;
    counters.bytes_to_peer[r] += plan.send_rows[r] * dispatch + recv_rows[r] * combine;
    counters.dispatch_bytes_sent += plan.send_rows[r] * dispatch;
    counters.dispatch_bytes_received += recv_rows[r] * dispatch;
    counters.combine_bytes_sent += recv_rows[r] * combine;
    counters.combine_bytes_received += plan.send_rows[r] * combine;
    const bool cross = topology != nullptr && !topology->SameNode(rank, static_cast<int>(r));
    (cross ? counters.cross_node_bytes_sent : counters.intra_node_bytes_sent) +=
        plan.send_rows[r] * dispatch + recv_rows[r] * combine;
    (cross ? counters.cross_node_bytes_received : counters.intra_node_bytes_received) +=
        recv_rows[r] * dispatch + plan.send_rows[r] * combine;
  }
}

}  // namespace semmoe::engine
