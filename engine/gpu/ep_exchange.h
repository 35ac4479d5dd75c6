// EpExchange<Ops>: the routed experts of a MoE layer under expert parallelism, on any Ops
// (engine/gpu/forward_runner.h) and any Communicator whose collectives take Ops memory (NCCL
// with CudaOps; Gloo with the CPU emulation, which is how CI tests it). The same exchange as
// the CPU's engine/parallel/ep_ffn.h:
//   dispatch  the DispatchPlan of engine/parallel/dispatch_plan.h: each token goes once to every
//             rank serving at least one of its top-k experts, with those experts' ids
//             (`num_experts` for slots served elsewhere) and gate weights;
//   experts   every rank runs its experts grouped by expert over the rows it received;
//   combine   each received row's gate-weighted sum goes back; the owner adds the returns in
//             rank order (deterministic).
// Every rank calls Run() for every MoE layer in the same order, with zero tokens if it has none.
#ifndef SEMMOE_ENGINE_GPU_EP_EXCHANGE_H_
#define SEMMOE_ENGINE_GPU_EP_EXCHANGE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "engine/gpu/grouped_experts.h"
#include "engine/gpu/model_view.h"
#include "engine/model/config.h"
#include "engine/parallel/communicator.h"
#include "engine/parallel/dispatch_plan.h"
#include "engine/parallel/moe_layer_counters.h"
#include "planner/placement/placement.h"

namespace semmoe::engine::gpu {

template <typename Ops>
class EpExchange {
 public:
  template <typename T>
  using Array = typename Ops::template Array<T>;

  // All borrowed; they outlive this.
  EpExchange(const model::ModelConfig& config, const planner::Placement& placement,
             Communicator& comm, Ops& ops)
      : c_(config), placement_(placement), comm_(comm), ops_(ops) {}

  // out [tokens, hidden] (Ops memory) = Σ_j weights[t, j] · expert_{ids[t, j]}(h[t]), the experts
  // run where the placement serves them. `ids`/`weights`: the tokens' routing on the host.
  // Adds each token's activations served on this rank, and all of them, to row_local/row_all,
  // and what the layer did to `counters` (CountExchange, as the CPU exchange; wall times of the
  // phases, device work included).
  absl::Status Run(int moe_index, const LayerView& w, const float* h, int64_t tokens,
                   const std::vector<int32_t>& ids, const std::vector<float>& weights, float* out,
                   std::vector<int32_t>& row_local, std::vector<int32_t>& row_all,
                   MoeLayerCounters& counters) {
    const int g = comm_.size(), me = comm_.rank(), k = c_.top_k, experts = c_.num_experts;
    const int64_t hidden = c_.hidden_size, inter = c_.moe_intermediate_size;
    absl::Time start = absl::Now();

    // Which rows go where, in rank order, with their expert ids and gate weights for their
    // destination (engine/parallel/dispatch_plan.h, shared with the CPU exchange).
    const DispatchPlan plan = PlanDispatch(placement_, moe_index, me, k, ids, weights);
    for (int64_t t = 0; t < tokens; ++t) {
      row_local[t] += plan.local_per_token[t];
      row_all[t] += k;
    }
    const std::vector<int64_t>& send_rows = plan.send_rows;
    std::vector<int64_t> recv_rows(g);
    const int64_t sent_total = static_cast<int64_t>(plan.send_index.size());

    // Row counts first (through Ops memory: an NCCL group reads device buffers only).
    RETURN_IF_ERROR(send_counts_.Reserve(g));
    RETURN_IF_ERROR(recv_counts_.Reserve(g));
    RETURN_IF_ERROR(ops_.CopyIn(send_counts_.data(), send_rows.data(), g));
    const std::vector<int64_t> ones(g, 1);
    RETURN_IF_ERROR(ops_.Finish());  // The collectives run on their own stream.
    absl::Time wait = absl::Now();
    RETURN_IF_ERROR(comm_.AllToAllV(absl::Span<const int64_t>(send_counts_.data(), g), ones,
                                    absl::Span<int64_t>(recv_counts_.data(), g), ones));
    counters.dispatch_wait_seconds += Seconds(wait);
    RETURN_IF_ERROR(ops_.CopyOut(recv_rows.data(), recv_counts_.data(), g));
    int64_t received = 0;
    for (int64_t n : recv_rows) {
      if (n < 0) return absl::InternalError("a peer announced a negative row count");
      received += n;
    }

    // Dispatch: rows, their expert ids, their gate weights.
    RETURN_IF_ERROR(Reserve(sent_total, received));
    RETURN_IF_ERROR(ops_.CopyIn(send_index_.data(), plan.send_index.data(), sent_total));
    RETURN_IF_ERROR(ops_.CopyIn(send_ids_.data(), plan.send_ids.data(), sent_total * k));
    RETURN_IF_ERROR(ops_.CopyIn(send_weights_.data(), plan.send_weights.data(), sent_total * k));
    RETURN_IF_ERROR(
        ops_.GatherRowsByIndex(h, send_index_.data(), sent_total, hidden, send_rows_.data()));
    RETURN_IF_ERROR(ops_.Finish());
    RETURN_IF_ERROR(comm_.AllToAllV(
        absl::Span<const float>(send_rows_.data(), sent_total * hidden), Scaled(send_rows, hidden),
        absl::Span<float>(recv_rows_.data(), received * hidden), Scaled(recv_rows, hidden)));
    RETURN_IF_ERROR(comm_.AllToAllV(
        absl::Span<const int32_t>(send_ids_.data(), sent_total * k), Scaled(send_rows, k),
        absl::Span<int32_t>(recv_ids_.data(), received * k), Scaled(recv_rows, k)));
    RETURN_IF_ERROR(comm_.AllToAllV(
        absl::Span<const float>(send_weights_.data(), sent_total * k), Scaled(send_rows, k),
        absl::Span<float>(recv_weights_.data(), received * k), Scaled(recv_rows, k)));
    CountExchange(plan, recv_rows, me, static_cast<int>(hidden), counters);
    counters.dispatch_seconds += Seconds(start);

    // This rank's experts over the received rows; bucket `experts` (plan.served_elsewhere) holds
    // the slots served elsewhere (their results are zero).
    RETURN_IF_ERROR(ops_.PermuteByExpert({.ids = recv_ids_.data(),
                                          .entries = received * k,
                                          .experts = experts + 1,
                                          .counts = counts_.data(),
                                          .offsets = offsets_.data(),
                                          .entry_of_position = entry_of_position_.data(),
                                          .position_of_entry = position_of_entry_.data()}));
    std::vector<int64_t> offsets(experts + 2);
    RETURN_IF_ERROR(ops_.CopyOut(offsets.data(), offsets_.data(), experts + 2));
    for (int e = 0; e < experts; ++e) {
      if (offsets[e + 1] > offsets[e] && !placement_.Holds(moe_index, me, e)) {
        return absl::InternalError(absl::StrCat("rank ", me, " was sent rows for expert ", e,
                                                " of MoE layer ", moe_index,
                                                ", which it does not hold"));
      }
    }
    RETURN_IF_ERROR(ops_.GatherRows({.x = recv_rows_.data(),
                                     .entry_of_position = entry_of_position_.data(),
                                     .entries = received * k,
                                     .k = k,
                                     .hidden = hidden,
                                     .y = y_.data()}));
    RETURN_IF_ERROR(RunGroupedExperts(ops_, offsets, experts, w.experts, y_.data(), g_.data(),
                                      u_.data(), z_.data(), hidden, inter));
    RETURN_IF_ERROR(ops_.Zero(z_.data() + offsets[experts] * hidden,
                              (offsets[experts + 1] - offsets[experts]) * hidden));
    RETURN_IF_ERROR(ops_.CombineRows({.y = z_.data(),
                                      .weights = recv_weights_.data(),
                                      .position_of_entry = position_of_entry_.data(),
                                      .tokens = received,
                                      .k = k,
                                      .hidden = hidden,
                                      .out = results_.data()}));

    // Combine: results back to their owners, added in rank order.
    RETURN_IF_ERROR(ops_.Finish());
    counters.expert_seconds += Seconds(start);
    RETURN_IF_ERROR(comm_.AllToAllV(
        absl::Span<const float>(results_.data(), received * hidden), Scaled(recv_rows, hidden),
        absl::Span<float>(back_.data(), sent_total * hidden), Scaled(send_rows, hidden)));
    RETURN_IF_ERROR(ops_.Zero(out, tokens * hidden));
    int64_t row = 0;
    for (int d = 0; d < g; ++d) {
      RETURN_IF_ERROR(ops_.ScatterAddRows(out, back_.data() + row * hidden,
                                          send_index_.data() + row, send_rows[d], hidden));
      row += send_rows[d];
    }
    RETURN_IF_ERROR(ops_.Finish());
    counters.combine_seconds += Seconds(start);
    return absl::OkStatus();
  }

 private:
  // Seconds since `start`, which moves to now.
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

  absl::Status Reserve(int64_t sent, int64_t received) {
    const int64_t hidden = c_.hidden_size, k = c_.top_k, entries = received * k;
    RETURN_IF_ERROR(send_index_.Reserve(sent));
    RETURN_IF_ERROR(send_rows_.Reserve(sent * hidden));
    RETURN_IF_ERROR(back_.Reserve(sent * hidden));
    RETURN_IF_ERROR(send_ids_.Reserve(sent * k));
    RETURN_IF_ERROR(send_weights_.Reserve(sent * k));
    RETURN_IF_ERROR(recv_rows_.Reserve(received * hidden));
    RETURN_IF_ERROR(results_.Reserve(received * hidden));
    RETURN_IF_ERROR(recv_ids_.Reserve(entries));
    RETURN_IF_ERROR(recv_weights_.Reserve(entries));
    RETURN_IF_ERROR(entry_of_position_.Reserve(entries));
    RETURN_IF_ERROR(position_of_entry_.Reserve(entries));
    RETURN_IF_ERROR(counts_.Reserve(c_.num_experts + 1));
    RETURN_IF_ERROR(offsets_.Reserve(c_.num_experts + 2));
    RETURN_IF_ERROR(y_.Reserve(entries * hidden));
    RETURN_IF_ERROR(z_.Reserve(entries * hidden));
    RETURN_IF_ERROR(g_.Reserve(entries * c_.moe_intermediate_size));
    return u_.Reserve(entries * c_.moe_intermediate_size);
  }

  const model::ModelConfig& c_;
  const planner::Placement& placement_;
  Communicator& comm_;
  Ops& ops_;
  Array<int64_t> send_counts_, recv_counts_, counts_, offsets_, entry_of_position_,
      position_of_entry_;
  Array<int32_t> send_index_, send_ids_, recv_ids_;
  Array<float> send_rows_, recv_rows_, send_weights_, recv_weights_, results_, back_, y_, z_, g_,
      u_;
};

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_EP_EXCHANGE_H_
