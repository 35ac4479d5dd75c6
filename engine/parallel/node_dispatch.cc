#include "engine/parallel/node_dispatch.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"

namespace semmoe::engine {

NodeDispatch PlanNodeDispatch(const DispatchPlan& plan, const planner::Topology& topology,
                              int rank) {
  const int g = topology.num_ranks(), k = plan.top_k, me_node = topology.NodeOf(rank);
  NodeDispatch nd;
  nd.top_k = k;
  nd.served_elsewhere = plan.served_elsewhere;
  nd.cross_rows.assign(g, 0);
  nd.direct_rows.assign(g, 0);
  nd.node_rows.assign(topology.num_nodes(), 0);
  // Per remote node, its tokens' merged slots (token → row among the node's rows).
  struct Merged {
    std::vector<int32_t> ids, dest;
    std::vector<float> weights;
  };
  std::vector<std::map<int32_t, Merged>> by_node(topology.num_nodes());
  int64_t row = 0;
  for (int d = 0; d < g; ++d) {
    const bool direct = topology.NodeOf(d) == me_node;
    for (int64_t i = 0; i < plan.send_rows[d]; ++i, ++row) {
      const int32_t t = plan.send_index[row];
      const int32_t* ids = plan.send_ids.data() + row * k;
      const float* weights = plan.send_weights.data() + row * k;
      if (direct) {
        nd.direct_index.push_back(t);
        nd.direct_ids.insert(nd.direct_ids.end(), ids, ids + k);
        nd.direct_weights.insert(nd.direct_weights.end(), weights, weights + k);
        ++nd.direct_rows[d];
        continue;
      }
      auto [it, added] = by_node[topology.NodeOf(d)].try_emplace(t);
      Merged& m = it->second;
      if (added) {
        m.ids.assign(k, plan.served_elsewhere);
        m.dest.assign(k, -1);
        m.weights.assign(weights, weights + k);
      }
      for (int j = 0; j < k; ++j) {
        if (ids[j] != plan.served_elsewhere) m.ids[j] = ids[j], m.dest[j] = d;
      }
    }
  }
  // Stage-1 rows by gateway rank (each remote node has one gateway for this rank).
  std::vector<std::pair<int, int>> gateways;  // (gateway rank, node)
  for (int n = 0; n < topology.num_nodes(); ++n) {
    if (n != me_node) gateways.push_back({topology.Gateway(rank, n), n});
  }
  std::sort(gateways.begin(), gateways.end());
  for (const auto& [gw, n] : gateways) {
    nd.node_rows[n] = static_cast<int64_t>(by_node[n].size());
    nd.cross_rows[gw] = nd.node_rows[n];
    for (const auto& [t, m] : by_node[n]) {  // Tokens ascending (std::map).
      nd.cross_index.push_back(t);
      nd.cross_ids.insert(nd.cross_ids.end(), m.ids.begin(), m.ids.end());
      nd.cross_dest.insert(nd.cross_dest.end(), m.dest.begin(), m.dest.end());
      nd.cross_weights.insert(nd.cross_weights.end(), m.weights.begin(), m.weights.end());
    }
  }
  return nd;
}

std::vector<int64_t> NodeRows(absl::Span<const int32_t> served_by, int top_k,
                              const planner::Topology& topology, int rank) {
  std::vector<int64_t> rows(topology.num_nodes(), 0);
  std::vector<int64_t> last(topology.num_nodes(), -1);
  const int me_node = topology.NodeOf(rank);
  const int64_t tokens = top_k > 0 ? static_cast<int64_t>(served_by.size()) / top_k : 0;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int j = 0; j < top_k; ++j) {
      const int n = topology.NodeOf(served_by[t * top_k + j]);
      if (n != me_node && last[n] != t) {
        last[n] = t;
        ++rows[n];
      }
    }
  }
  return rows;
}

absl::StatusOr<NodeExchangeSizes> SizeNodeExchange(
    const std::vector<std::vector<int64_t>>& rank_rows,
    const std::vector<std::vector<int64_t>>& node_rows, const planner::Topology& topology,
    int rank) {
  const int g = topology.num_ranks(), nodes = topology.num_nodes();
  if (static_cast<int>(rank_rows.size()) != g || static_cast<int>(node_rows.size()) != g) {
    return absl::InvalidArgumentError("node exchange: counts for the wrong number of ranks");
  }
  for (int o = 0; o < g; ++o) {
    if (static_cast<int>(rank_rows[o].size()) != g ||
        static_cast<int>(node_rows[o].size()) != nodes) {
      return absl::InvalidArgumentError(absl::StrCat("node exchange: rank ", o,
                                                     "'s counts have the wrong shape"));
    }
    for (int64_t c : rank_rows[o]) {
      if (c < 0) return absl::InvalidArgumentError(absl::StrCat("rank ", o, ": negative rows"));
    }
    for (int64_t c : node_rows[o]) {
      if (c < 0) return absl::InvalidArgumentError(absl::StrCat("rank ", o, ": negative rows"));
    }
  }
  const int me_node = topology.NodeOf(rank);
  NodeExchangeSizes s;
  s.cross_send.assign(g, 0);
  s.cross_recv.assign(g, 0);
  s.local_send.assign(g, 0);
  s.local_recv.assign(g, 0);
  s.forwarded_send.assign(g, 0);
  // Rows origin o's gateway `via` on me's node forwards to rank d of that node.
  auto forwarded = [&](int via, int d) {
    int64_t rows = 0;
    for (int o = 0; o < g; ++o) {
      if (topology.NodeOf(o) != me_node && topology.Gateway(o, me_node) == via) {
        rows += rank_rows[o][d];
      }
    }
    return rows;
  };
  for (int r = 0; r < g; ++r) {
    const int n = topology.NodeOf(r);
    if (n != me_node) {
      if (topology.Gateway(rank, n) == r) s.cross_send[r] = node_rows[rank][n];
      if (topology.Gateway(r, me_node) == rank) s.cross_recv[r] = node_rows[r][me_node];
      continue;
    }
    s.forwarded_send[r] = forwarded(rank, r);
    if (r == rank) continue;
    s.local_send[r] = rank_rows[rank][r] + s.forwarded_send[r];
    s.local_recv[r] = rank_rows[r][rank] + forwarded(r, rank);
  }
  s.self_rows = rank_rows[rank][rank] + s.forwarded_send[rank];
  return s;
}

absl::StatusOr<FanOut> PlanFanOut(absl::Span<const int32_t> ids, absl::Span<const int32_t> dest,
                                  absl::Span<const float> weights, int top_k, int num_experts,
                                  const planner::Topology& topology, int rank) {
  const int g = topology.num_ranks(), k = top_k;
  const int64_t rows = k > 0 ? static_cast<int64_t>(ids.size()) / k : 0;
  if (dest.size() != ids.size() || weights.size() != ids.size()) {
    return absl::InternalError("node exchange: stage-1 ids, ranks and weights differ in size");
  }
  const int me_node = topology.NodeOf(rank);
  FanOut f;
  f.rows.assign(g, 0);
  for (int64_t i = 0; i < rows * k; ++i) {
    if (ids[i] == num_experts) continue;
    if (ids[i] < 0 || ids[i] > num_experts || dest[i] < 0 || dest[i] >= g ||
        topology.NodeOf(dest[i]) != me_node) {
      return absl::InternalError(absl::StrCat("node exchange: received row ", i / k, " slot ",
                                              i % k, " names expert ", ids[i], " on rank ",
                                              dest[i], ", not a rank of node ", me_node));
    }
  }
  for (int d : topology.RanksOn(me_node)) {
    for (int64_t r = 0; r < rows; ++r) {
      bool any = false;
      for (int j = 0; j < k; ++j) any = any || (ids[r * k + j] != num_experts && dest[r * k + j] == d);
      if (!any) continue;
      f.index.push_back(static_cast<int32_t>(r));
      ++f.rows[d];
      for (int j = 0; j < k; ++j) {
        const bool mine = ids[r * k + j] != num_experts && dest[r * k + j] == d;
        f.ids.push_back(mine ? ids[r * k + j] : num_experts);
        f.weights.push_back(weights[r * k + j]);
      }
    }
  }
  return f;
}

int64_t CrossRowBytes(int hidden, int top_k) {
  return int64_t{hidden} * 4 + int64_t{top_k} * (4 + 4 + 4);
}

}  // namespace semmoe::engine
