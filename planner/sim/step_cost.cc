#include "planner/sim/step_cost.h"

#include <algorithm>

namespace semmoe::planner::sim {

void MoeTraffic::Reset(int ranks, bool stages) {
  g = ranks;
  two_stage = stages;
  rows.assign(static_cast<size_t>(g) * g, 0);
  local_rows.assign(two_stage ? static_cast<size_t>(g) * g : 0, 0);
  expert_rows.assign(g, 0);
  active_experts.assign(g, 0);
  own_tokens.assign(g, 0);
}

double StepCost::StretchAt(const ClusterProfile& profile, double arrival_rate) {
  const double cores = profile.host_cores.value;
  if (cores <= 0 || arrival_rate <= 0) return 1;
  const double taken = std::min(0.9, arrival_rate * profile.host_cpu_per_request.value / cores);
  return 1 / (1 - taken);
}

double StepCost::SharedCoreWait() const {
  const double cores = profile_.host_cores.value;
  if (cores <= 0) return 0;
  return profile_.shared_core_wait.value * std::max(0.0, topo_.num_ranks() / cores - 1) * stretch_;
}

double StepCost::Roofline(double flops, double bytes) const {
  return stretch_ * (profile_.kernel_overhead.value +
                     std::max(flops / profile_.flops.value, bytes / profile_.mem_bw.value));
}

double StepCost::Attention(const AttentionWork& w, int shards) const {
  if (w.tokens == 0) return 0;
  const double s = shards;
  const double proj_flops = 2.0 * w.tokens * shape_.attention_params / s;
  const double score_flops =
      2.0 * w.attended * shape_.attention_heads * (shape_.qk_head_dim + shape_.v_head_dim) / s;
  const double bytes =
      shape_.attention_params * profile_.weight_bytes.value / s +
      static_cast<double>(w.kv_read) * shape_.kv_values * profile_.kv_bytes.value / s;
  return Roofline(proj_flops + score_flops, bytes);
}

double StepCost::DenseMlp(int64_t tokens, int shards) const {
  if (tokens == 0) return 0;
  const double params = static_cast<double>(shape_.MlpParams(shape_.dense_intermediate)) / shards;
  return Roofline(2.0 * tokens * params, params * profile_.weight_bytes.value);
}

double StepCost::LmHead(int64_t rows, int shards) const {
  if (rows == 0) return 0;
  const double params = static_cast<double>(shape_.hidden) * shape_.vocab / shards;
  return Roofline(2.0 * rows * params, params * profile_.weight_bytes.value);
}

void LinkLoads::Reset(const planner::Topology& topo) {
  const int g = topo.num_ranks(), nodes = topo.num_nodes();
  for (auto* v : {&intra_out, &intra_in, &inter_out, &inter_in}) v->assign(g, 0);
  node_out.assign(nodes, 0), node_in.assign(nodes, 0);
  peers.assign(g, 0);
}

void LinkLoads::Add(const planner::Topology& topo, int s, int d, double b) {
  if (topo.SameNode(s, d)) {
    intra_out[s] += b, intra_in[d] += b;
  } else {
    inter_out[s] += b, inter_in[d] += b;
    node_out[topo.NodeOf(s)] += b, node_in[topo.NodeOf(d)] += b;
  }
}

double StepCost::Collective(const std::vector<double>& bytes) const {
  const int g = topo_.num_ranks();
  LinkLoads loads(topo_);
  for (int s = 0; s < g; ++s) {
    for (int d = 0; d < g; ++d) {
      const double b = bytes[static_cast<size_t>(s) * g + d];
      if (s == d || b <= 0) continue;
      loads.Add(topo_, s, d, b);
      ++loads.peers[s];
    }
  }
  return CollectiveTime(loads);
}

double StepCost::CollectiveTime(const LinkLoads& l) const {
  const bool per_node = profile_.inter_per_node.value != 0;
  const double eff = profile_.a2a_efficiency.value;
  const double intra = profile_.intra_bw.value * eff, inter = profile_.inter_bw.value * eff;
  double slowest = 0;
  for (int r = 0; r < topo_.num_ranks(); ++r) {
    // Copies inside a host and the per-message costs are the ranks' processors' work (they
    // stretch); a link between nodes runs at its own rate.
    double link = stretch_ * std::max(l.intra_out[r], l.intra_in[r]) / intra;
    if (per_node) {
      const int n = topo_.NodeOf(r);
      link = std::max(link, std::max(l.node_out[n], l.node_in[n]) / inter);
    } else {
      link = std::max(link, std::max(l.inter_out[r], l.inter_in[r]) / inter);
    }
    slowest = std::max(slowest, stretch_ * profile_.message_latency.value * l.peers[r] + link);
  }
  return stretch_ * profile_.collective_latency.value + slowest;
}

double StepCost::ExpertsTime(double expert_rows, double active_experts, double own_tokens) const {
  const double expert_params = static_cast<double>(shape_.MlpParams(shape_.expert_intermediate));
  const double shared_params = static_cast<double>(shape_.MlpParams(shape_.shared_intermediate));
  double time = 0;
  if (expert_rows > 0) {
    time += Roofline(2.0 * expert_rows * expert_params,
                     active_experts * expert_params * profile_.weight_bytes.value);
  }
  if (shared_params > 0 && own_tokens > 0) {
    time += Roofline(2.0 * own_tokens * shared_params, shared_params * profile_.weight_bytes.value);
  }
  return time;
}

double StepCost::DispatchRowBytes() const {
  return shape_.hidden * profile_.wire_bytes.value + shape_.top_k * 8.0;
}

double StepCost::CrossRowBytes() const {
  return shape_.hidden * profile_.wire_bytes.value + shape_.top_k * 12.0;
}

double StepCost::CombineRowBytes() const { return shape_.hidden * profile_.wire_bytes.value; }

MoeTime StepCost::Moe(const MoeTraffic& t, const std::vector<double>& attention_per_rank,
                      bool counts_exchange) const {
  const int g = t.g;
  MoeTime m;
  if (!attention_per_rank.empty()) {
    const auto [lo, hi] = std::minmax_element(attention_per_rank.begin(), attention_per_rank.end());
    m.wait = *hi - *lo;
  }
  std::vector<double> bytes(t.rows.size());
  // One collective moving `matrix` rows of `row_bytes`, transposed for the combine.
  auto move = [&](const std::vector<int64_t>& matrix, double row_bytes, bool transpose) {
    for (int s = 0; s < g; ++s) {
      for (int d = 0; d < g; ++d) {
        const size_t from =
            transpose ? static_cast<size_t>(d) * g + s : static_cast<size_t>(s) * g + d;
        bytes[static_cast<size_t>(s) * g + d] = matrix[from] * row_bytes;
      }
    }
    return Collective(bytes);
  };
  if (g > 1) {
    if (counts_exchange) {  // Per peer its row count (two stages: every rank's G + N counts).
      const double per_peer = t.two_stage ? 8.0 * (g + topo_.num_nodes()) : 8.0;
      for (int s = 0; s < g; ++s) {
        for (int d = 0; d < g; ++d) bytes[static_cast<size_t>(s) * g + d] = s == d ? 0 : per_peer;
      }
      m.dispatch += Collective(bytes);
    }
    if (t.two_stage) {
      m.dispatch +=
          move(t.rows, CrossRowBytes(), false) + move(t.local_rows, DispatchRowBytes(), false);
      m.combine =
          move(t.local_rows, CombineRowBytes(), true) + move(t.rows, CombineRowBytes(), true);
    } else {
      m.dispatch += move(t.rows, DispatchRowBytes(), false);
      m.combine = move(t.rows, CombineRowBytes(), true);
    }
  }
  for (int d = 0; d < g; ++d) {
    m.experts = std::max(m.experts, ExpertsTime(static_cast<double>(t.expert_rows[d]),
                                                static_cast<double>(t.active_experts[d]),
                                                static_cast<double>(t.own_tokens[d])));
  }
  return m;
}

}  // namespace semmoe::planner::sim
