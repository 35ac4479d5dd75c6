// NodeExchange<Ops>: a MoE layer's dispatch and combine with node-level dedup, when the group's
// ranks sit on several nodes (engine/parallel/node_dispatch.h has the plan and the stages):
//   counts    every rank's rows per rank and per node, all-gathered (one collective: what the
//             flat exchange's row-count all-to-all is), from which every rank sizes both stages;
//   stage 1   rows, ids, serving ranks and weights to the gateways of remote nodes (one grouped
//             all-to-all; only pairs of ranks at the same local index on different nodes carry
//             rows);
//   stage 2   inside each node: own tokens to the ranks serving them, and the rows a gateway
//             received fanned out to the ranks of its node serving their slots (one grouped
//             all-to-all; only pairs on one node carry rows);
//   experts   every rank serves the rows it holds (EpExchange's ServeRows, through `serve`);
//   combine   stage 2's partial sums back to their senders; a gateway adds a forwarded row's
//             partials (its node's ranks in rank order) and sends one row back across; the owner
//             adds its node's partials in rank order, then each remote node's sum in gateway rank
//             order (deterministic, and equal to the flat exchange's up to the order of the sum).
// Five collectives a layer against the flat exchange's three; what it saves is the rows over the
// slow links between nodes: one per token and remote node instead of one per remote rank.
// Every rank calls Run for every MoE layer in the same order (zero tokens if it has none).
#ifndef SEMMOE_ENGINE_FORWARD_NODE_EXCHANGE_H_
#define SEMMOE_ENGINE_FORWARD_NODE_EXCHANGE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "engine/parallel/communicator.h"
#include "engine/parallel/dispatch_plan.h"
#include "engine/parallel/moe_layer_counters.h"
#include "engine/parallel/node_dispatch.h"
#include "planner/placement/topology.h"

namespace semmoe::engine::forward {

template <typename Ops>
class NodeExchange {
 public:
  template <typename T>
  using Array = typename Ops::template Array<T>;
  // out [rows, hidden] = each row's gate-weighted sum over the slots this rank serves (x, ids,
  // weights: Ops memory, [rows, hidden] and [rows, k]); queued on the device.
  using Serve = std::function<absl::Status(const float* x, const int32_t* ids,
                                           const float* weights, int64_t rows, float* out)>;

  // All borrowed; they outlive this. REQUIRES: topology.num_ranks() == comm.size().
  NodeExchange(const planner::Topology& topology, Communicator& comm, Ops& ops, int hidden,
               int top_k, int num_experts)
      : topo_(topology), comm_(comm), ops_(ops), hidden_(hidden), k_(top_k), experts_(num_experts) {}

  // The dispatch of `plan` (this rank's tokens, h [tokens, hidden] in Ops memory), the experts
  // through `serve`, and the combine into out [tokens, hidden]. Adds the bytes, split into
  // cross-node and intra-node, to `counters` (not the plan's tokens and activations: the caller
  // counts those). Returns when out is final on the device.
  absl::Status Run(const DispatchPlan& plan, const float* h, int64_t tokens, const Serve& serve,
                   float* out, MoeLayerCounters& counters) {
    const int g = comm_.size(), me = comm_.rank(), nodes = topo_.num_nodes(), k = k_;
    const int64_t hidden = hidden_;
    absl::Time start = absl::Now();
    const NodeDispatch nd = PlanNodeDispatch(plan, topo_, me);

    // Every rank's rows per rank and per node: one all-gather of G + N counts each.
    const int64_t width = g + nodes;
    std::vector<int64_t> mine(plan.send_rows.begin(), plan.send_rows.end());
    mine.insert(mine.end(), nd.node_rows.begin(), nd.node_rows.end());
    RETURN_IF_ERROR(own_counts_.Reserve(width));
    RETURN_IF_ERROR(all_counts_.Reserve(width * g));
    RETURN_IF_ERROR(ops_.CopyIn(own_counts_.data(), mine.data(), width));
    RETURN_IF_ERROR(ops_.Finish());
    absl::Time wait = absl::Now();
    RETURN_IF_ERROR(comm_.AllGatherV(absl::Span<const int64_t>(own_counts_.data(), width),
                                     std::vector<int64_t>(g, width),
                                     absl::Span<int64_t>(all_counts_.data(), width * g)));
    counters.dispatch_wait_seconds += Seconds(wait);
    std::vector<int64_t> all(width * g);
    RETURN_IF_ERROR(ops_.CopyOut(all.data(), all_counts_.data(), width * g));
    std::vector<std::vector<int64_t>> rank_rows(g), node_rows(g);
    for (int r = 0; r < g; ++r) {
      rank_rows[r].assign(all.begin() + r * width, all.begin() + r * width + g);
      node_rows[r].assign(all.begin() + r * width + g, all.begin() + (r + 1) * width);
    }
    absl::StatusOr<NodeExchangeSizes> sized = SizeNodeExchange(rank_rows, node_rows, topo_, me);
    if (!sized.ok()) return absl::InternalError(sized.status().message());
    const NodeExchangeSizes& s = *sized;
    int64_t cross_out = 0, cross_in = 0, local_out = 0, local_in = 0;
    for (int r = 0; r < g; ++r) {
      cross_out += s.cross_send[r], cross_in += s.cross_recv[r];
      local_out += s.local_send[r], local_in += s.local_recv[r];
    }

    // Stage 1: rows to the gateways, received after a copy of this rank's own rows (stage_ is
    // [tokens | received rows], the source stage 2 gathers from).
    const int64_t staged = tokens + cross_in;
    RETURN_IF_ERROR(stage_.Reserve(staged * hidden));
    RETURN_IF_ERROR(cross_rows_.Reserve(cross_out * hidden));
    RETURN_IF_ERROR(cross_index_.Reserve(cross_out));
    RETURN_IF_ERROR(cross_ids_.Reserve(cross_out * k));
    RETURN_IF_ERROR(cross_dest_.Reserve(cross_out * k));
    RETURN_IF_ERROR(cross_weights_.Reserve(cross_out * k));
    RETURN_IF_ERROR(in_ids_.Reserve(cross_in * k));
    RETURN_IF_ERROR(in_dest_.Reserve(cross_in * k));
    RETURN_IF_ERROR(in_weights_.Reserve(cross_in * k));
    RETURN_IF_ERROR(ops_.Copy(stage_.data(), h, tokens * hidden));
    RETURN_IF_ERROR(ops_.CopyIn(cross_index_.data(), nd.cross_index.data(), cross_out));
    RETURN_IF_ERROR(ops_.CopyIn(cross_ids_.data(), nd.cross_ids.data(), cross_out * k));
    RETURN_IF_ERROR(ops_.CopyIn(cross_dest_.data(), nd.cross_dest.data(), cross_out * k));
    RETURN_IF_ERROR(ops_.CopyIn(cross_weights_.data(), nd.cross_weights.data(), cross_out * k));
    RETURN_IF_ERROR(
        ops_.GatherRowsByIndex(h, cross_index_.data(), cross_out, hidden, cross_rows_.data()));
    RETURN_IF_ERROR(ops_.Finish());
    using Part = Communicator::AllToAllPart;
    {
      const std::vector<int64_t> rows_out = Scaled(s.cross_send, hidden),
                                 rows_in = Scaled(s.cross_recv, hidden),
                                 slots_out = Scaled(s.cross_send, k),
                                 slots_in = Scaled(s.cross_recv, k);
      const Part parts[] = {
          Part::Of(absl::Span<const float>(cross_rows_.data(), cross_out * hidden), rows_out,
                   absl::Span<float>(stage_.data() + tokens * hidden, cross_in * hidden), rows_in),
          Part::Of(absl::Span<const int32_t>(cross_ids_.data(), cross_out * k), slots_out,
                   absl::Span<int32_t>(in_ids_.data(), cross_in * k), slots_in),
          Part::Of(absl::Span<const int32_t>(cross_dest_.data(), cross_out * k), slots_out,
                   absl::Span<int32_t>(in_dest_.data(), cross_in * k), slots_in),
          Part::Of(absl::Span<const float>(cross_weights_.data(), cross_out * k), slots_out,
                   absl::Span<float>(in_weights_.data(), cross_in * k), slots_in)};
      RETURN_IF_ERROR(comm_.AllToAllVParts(parts));
    }
    std::vector<int32_t> ids(cross_in * k), dest(cross_in * k);
    std::vector<float> weights(cross_in * k);
    RETURN_IF_ERROR(ops_.CopyOut(ids.data(), in_ids_.data(), cross_in * k));
    RETURN_IF_ERROR(ops_.CopyOut(dest.data(), in_dest_.data(), cross_in * k));
    RETURN_IF_ERROR(ops_.CopyOut(weights.data(), in_weights_.data(), cross_in * k));
    ASSIGN_OR_RETURN(const FanOut fan, PlanFanOut(ids, dest, weights, k, experts_, topo_, me));
    for (int d = 0; d < g; ++d) {
      if (fan.rows[d] != s.forwarded_send[d]) {
        return absl::InternalError(absl::StrCat("node exchange: rank ", me, " forwards ",
                                                fan.rows[d], " rows to rank ", d, ", its peers ",
                                                "announced ", s.forwarded_send[d]));
      }
    }

    // Stage 2: per rank of this node, this rank's own tokens to it, then the rows it forwards
    // there; its own segment (served here) first, the peers' after in rank order.
    std::vector<int32_t> index;
    std::vector<int32_t> send_ids;
    std::vector<float> send_weights;
    std::vector<int64_t> sent(g, 0);
    auto append = [&](int d) {
      int64_t direct_at = 0, fan_at = 0;
      for (int r = 0; r < d; ++r) direct_at += nd.direct_rows[r], fan_at += fan.rows[r];
      for (int64_t i = direct_at; i < direct_at + nd.direct_rows[d]; ++i) {
        index.push_back(nd.direct_index[i]);
        send_ids.insert(send_ids.end(), nd.direct_ids.begin() + i * k,
                        nd.direct_ids.begin() + (i + 1) * k);
        send_weights.insert(send_weights.end(), nd.direct_weights.begin() + i * k,
                            nd.direct_weights.begin() + (i + 1) * k);
      }
      for (int64_t i = fan_at; i < fan_at + fan.rows[d]; ++i) {
        index.push_back(static_cast<int32_t>(tokens + fan.index[i]));
        send_ids.insert(send_ids.end(), fan.ids.begin() + i * k, fan.ids.begin() + (i + 1) * k);
        send_weights.insert(send_weights.end(), fan.weights.begin() + i * k,
                            fan.weights.begin() + (i + 1) * k);
      }
      sent[d] = nd.direct_rows[d] + fan.rows[d];
    };
    append(me);
    for (int d = 0; d < g; ++d) {
      if (d != me && topo_.SameNode(d, me)) append(d);
    }
    const int64_t self = sent[me];
    if (self != s.self_rows) {
      return absl::InternalError(absl::StrCat("node exchange: rank ", me, " keeps ", self,
                                              " rows, its peers' counts say ", s.self_rows));
    }
    for (int d = 0; d < g; ++d) {
      if (d != me && sent[d] != s.local_send[d]) {
        return absl::InternalError(absl::StrCat("node exchange: rank ", me, " sends ", sent[d],
                                                " rows to rank ", d, " of its node, the counts "
                                                "say ", s.local_send[d]));
      }
    }
    const int64_t planned = self + local_out, held = self + local_in;
    RETURN_IF_ERROR(index_.Reserve(planned));
    RETURN_IF_ERROR(send_rows_.Reserve(planned * hidden));
    RETURN_IF_ERROR(send_ids_.Reserve(planned * k));
    RETURN_IF_ERROR(send_weights_.Reserve(planned * k));
    RETURN_IF_ERROR(held_rows_.Reserve(held * hidden));
    RETURN_IF_ERROR(held_ids_.Reserve(held * k));
    RETURN_IF_ERROR(held_weights_.Reserve(held * k));
    RETURN_IF_ERROR(results_.Reserve(held * hidden));
    RETURN_IF_ERROR(back_.Reserve(local_out * hidden));
    RETURN_IF_ERROR(acc_.Reserve(staged * hidden));
    RETURN_IF_ERROR(back_cross_.Reserve(cross_out * hidden));
    RETURN_IF_ERROR(ops_.CopyIn(index_.data(), index.data(), planned));
    RETURN_IF_ERROR(ops_.CopyIn(send_ids_.data(), send_ids.data(), planned * k));
    RETURN_IF_ERROR(ops_.CopyIn(send_weights_.data(), send_weights.data(), planned * k));
    RETURN_IF_ERROR(
        ops_.GatherRowsByIndex(stage_.data(), index_.data(), planned, hidden, send_rows_.data()));
    // This rank's own segment is held in front of what its peers send.
    RETURN_IF_ERROR(ops_.Copy(held_rows_.data(), send_rows_.data(), self * hidden));
    RETURN_IF_ERROR(ops_.CopyIn(held_ids_.data(), send_ids.data(), self * k));
    RETURN_IF_ERROR(ops_.CopyIn(held_weights_.data(), send_weights.data(), self * k));
    RETURN_IF_ERROR(ops_.Finish());
    {
      const std::vector<int64_t> rows_out = Scaled(s.local_send, hidden),
                                 rows_in = Scaled(s.local_recv, hidden),
                                 slots_out = Scaled(s.local_send, k),
                                 slots_in = Scaled(s.local_recv, k);
      const Part parts[] = {
          Part::Of(absl::Span<const float>(send_rows_.data() + self * hidden, local_out * hidden),
                   rows_out, absl::Span<float>(held_rows_.data() + self * hidden, local_in * hidden),
                   rows_in),
          Part::Of(absl::Span<const int32_t>(send_ids_.data() + self * k, local_out * k),
                   slots_out, absl::Span<int32_t>(held_ids_.data() + self * k, local_in * k),
                   slots_in),
          Part::Of(absl::Span<const float>(send_weights_.data() + self * k, local_out * k),
                   slots_out, absl::Span<float>(held_weights_.data() + self * k, local_in * k),
                   slots_in)};
      RETURN_IF_ERROR(comm_.AllToAllVParts(parts));
    }
    counters.dispatch_seconds += Seconds(start);

    // Experts over every row this rank holds.
    RETURN_IF_ERROR(
        serve(held_rows_.data(), held_ids_.data(), held_weights_.data(), held, results_.data()));
    RETURN_IF_ERROR(ops_.Finish());
    counters.expert_seconds += Seconds(start);

    // Combine, stage 2 reversed: partial sums back to their senders, added into acc_ ([tokens |
    // forwarded rows], as stage_) per rank of this node in rank order.
    RETURN_IF_ERROR(comm_.AllToAllV(
        absl::Span<const float>(results_.data() + self * hidden, local_in * hidden),
        Scaled(s.local_recv, hidden), absl::Span<float>(back_.data(), local_out * hidden),
        Scaled(s.local_send, hidden)));
    RETURN_IF_ERROR(ops_.Zero(acc_.data(), staged * hidden));
    int64_t row = 0;  // In back_ (the peers' segments, rank order).
    for (int d = 0; d < g; ++d) {
      if (d == me) {
        RETURN_IF_ERROR(ops_.ScatterAddRows(acc_.data(), results_.data(), index_.data(), self,
                                            hidden));
      } else if (topo_.SameNode(d, me)) {
        RETURN_IF_ERROR(ops_.ScatterAddRows(acc_.data(), back_.data() + row * hidden,
                                            index_.data() + self + row, sent[d], hidden));
        row += sent[d];
      }
    }
    // Stage 1 reversed: each forwarded row's sum back to its origin, added per gateway.
    RETURN_IF_ERROR(ops_.Finish());
    RETURN_IF_ERROR(comm_.AllToAllV(
        absl::Span<const float>(acc_.data() + tokens * hidden, cross_in * hidden),
        Scaled(s.cross_recv, hidden), absl::Span<float>(back_cross_.data(), cross_out * hidden),
        Scaled(s.cross_send, hidden)));
    RETURN_IF_ERROR(ops_.Copy(out, acc_.data(), tokens * hidden));
    RETURN_IF_ERROR(ops_.ScatterAddRows(out, back_cross_.data(), cross_index_.data(), cross_out,
                                        hidden));
    RETURN_IF_ERROR(ops_.Finish());
    counters.combine_seconds += Seconds(start);
    Count(s, counters);
    return absl::OkStatus();
  }

 private:
  // The bytes of both stages, peers only: stage 1 (and its combine) crosses nodes, stage 2 (and
  // its combine) stays inside.
  void Count(const NodeExchangeSizes& s, MoeLayerCounters& counters) const {
    const int g = comm_.size();
    const int64_t cross = CrossRowBytes(hidden_, k_), local = DispatchRowBytes(hidden_, k_),
                  back = CombineRowBytes(hidden_);
    counters.bytes_to_peer.resize(g, 0);
    for (int r = 0; r < g; ++r) {
      const int64_t out = s.cross_send[r] * cross + s.local_send[r] * local;
      const int64_t in = s.cross_recv[r] * cross + s.local_recv[r] * local;
      const int64_t back_out = (s.cross_recv[r] + s.local_recv[r]) * back;
      const int64_t back_in = (s.cross_send[r] + s.local_send[r]) * back;
      counters.dispatch_bytes_sent += out;
      counters.dispatch_bytes_received += in;
      counters.combine_bytes_sent += back_out;
      counters.combine_bytes_received += back_in;
      counters.bytes_to_peer[r] += out + back_out;
      counters.cross_node_bytes_sent += s.cross_send[r] * cross + s.cross_recv[r] * back;
      counters.cross_node_bytes_received += s.cross_recv[r] * cross + s.cross_send[r] * back;
      counters.intra_node_bytes_sent += s.local_send[r] * local + s.local_recv[r] * back;
      counters.intra_node_bytes_received += s.local_recv[r] * local + s.local_send[r] * back;
    }
  }

  static double Seconds(absl::Time& start) {
    const absl::Time now = absl::Now();
    const double s = absl::ToDoubleSeconds(now - start);
    start = now;
    return s;
  }

  static std::vector<int64_t> Scaled(const std::vector<int64_t>& rows, int64_t width) {
    std::vector<int64_t> out(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) out[i] = rows[i] * width;
    return out;
  }

  const planner::Topology& topo_;
  Communicator& comm_;
  Ops& ops_;
  const int hidden_, k_, experts_;
  Array<int64_t> own_counts_, all_counts_;
  Array<int32_t> cross_index_, cross_ids_, cross_dest_, in_ids_, in_dest_, index_, send_ids_,
      held_ids_;
  Array<float> stage_, cross_rows_, cross_weights_, in_weights_, send_rows_, send_weights_,
      held_rows_, held_weights_, results_, back_, acc_, back_cross_;
};

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_NODE_EXCHANGE_H_
