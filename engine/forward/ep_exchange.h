// EpExchange<Ops>: the routed experts of a MoE layer under expert parallelism, on any Ops
// (engine/forward/forward_runner.h) and any Communicator whose collectives take Ops memory (NCCL
// with CudaOps; Gloo with CpuOps, the CPU product's ranks):
//   dispatch  the DispatchPlan of engine/parallel/dispatch_plan.h: each token goes once to every
//             rank serving at least one of its top-k experts, with those experts' ids
//             (`num_experts` for slots served elsewhere) and gate weights: rows, ids and
//             weights in one collective (Communicator::AllToAllVParts), after the row counts.
//             With replicas (and the holder choice on), every rank computes the same per-batch
//             holder choice (planner/placement/holder_choice.h) from every rank's activations per
//             expert: an expert a rank does not hold runs on the least-loaded of its holders. A
//             small batch (every rank's routing at most `routing_gather_max_bytes`, the ranks'
//             token counts known: under DP agreed before the pass (ForwardOptions::rank_tokens) or
//             gathered by BeginPass, under Attention-TP the chunk sizes; SetRankTokens) all-gathers
//             the ranks' routing — one collective, from which every rank derives the demand, the
//             choice and the rows each peer sends it, so the row-count exchange is skipped; a
//             larger one all-gathers the activations per expert, then exchanges row counts (two);
//   experts   every rank runs its experts grouped by expert over the rows it received;
//   combine   each received row's gate-weighted sum goes back; the owner adds the returns in
//             rank order (deterministic).
// Overlap: a rank's rows for its own experts never enter the collectives. They are queued on the
// device before the dispatch's all-to-all, so the device computes them while the collective
// (NCCL, on its own stream) moves the peers' rows; the caller's independent work (the shared
// expert) is queued before the combine's all-to-all likewise. The sum is unchanged: a rank's own
// results are added at their place in rank order.
// That overlap needs an op set whose work runs beside the collectives (Ops::kOverlapsCollectives:
// CudaOps). On the CPU op set the calling thread does both in turn, so there a rank's own rows
// join the received ones after the dispatch and every expert's weights are read once per layer,
// not once for each group of rows.
// Every rank calls Run() for every MoE layer in the same order, with zero tokens if it has none.
#ifndef SEMMOE_ENGINE_FORWARD_EP_EXCHANGE_H_
#define SEMMOE_ENGINE_FORWARD_EP_EXCHANGE_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "engine/forward/forward_options.h"
#include "engine/forward/grouped_experts.h"
#include "engine/forward/model_view.h"
#include "engine/forward/node_exchange.h"
#include "engine/parallel/communicator.h"
#include "engine/parallel/dispatch_plan.h"
#include "engine/parallel/moe_layer_counters.h"
#include "engine/text/config.h"
#include "planner/placement/holder_choice.h"
#include "planner/placement/placement.h"

namespace semmoe::engine::forward {

// Whether Ops' work runs beside the communicator's collectives (Ops::kOverlapsCollectives).
template <typename Ops, typename = void>
struct OpsOverlapCollectives : std::false_type {};
template <typename Ops>
struct OpsOverlapCollectives<Ops, std::enable_if_t<Ops::kOverlapsCollectives>> : std::true_type {};

template <typename Ops>
class EpExchange {
 public:
  template <typename T>
  using Array = typename Ops::template Array<T>;

  // All borrowed; they outlive this. `holder_choice`: with replicas, choose each batch's holders
  // by load (else an expert a rank does not hold runs on its home). `routing_gather_max_bytes`:
  // see the top (0: never; the demand and row counts are exchanged apart).
  // `topology` (may be null: one node): with several nodes of several ranks, the dispatch and
  // combine run in two stages (node_exchange.h).
  EpExchange(const model::ModelConfig& config, const planner::Placement& placement,
             Communicator& comm, Ops& ops, bool holder_choice = true,
             int64_t routing_gather_max_bytes = kRoutingGatherMaxBytes,
             const planner::Topology* topology = nullptr)
      : c_(config),
        placement_(placement),
        comm_(comm),
        ops_(ops),
        holder_choice_(holder_choice && placement.replicas_per_device() > 0),
        routing_gather_max_bytes_(routing_gather_max_bytes),
        topology_(topology) {
    if (topology != nullptr && topology->num_nodes() > 1 &&
        topology->num_nodes() < topology->num_ranks() &&
        topology->num_ranks() == comm.size()) {
      node_ = std::make_unique<NodeExchange<Ops>>(*topology, comm, ops, config.hidden_size,
                                                  config.top_k, config.num_experts);
    }
  }

  // Whether the dispatch deduplicates per node (two stages).
  bool node_dedup() const { return node_ != nullptr; }

  // Under data-parallel attention, before a pass's first MoE layer (every rank, an idle one with
  // 0): all-gathers every rank's token count for the pass — one small collective a pass, only
  // with the holder choice — so that small batches' layers take one collective each.
  absl::Status BeginPass(int64_t tokens) {
    rank_tokens_.clear();
    if (!holder_choice_ || routing_gather_max_bytes_ <= 0) return absl::OkStatus();
    const int g = comm_.size();
    RETURN_IF_ERROR(own_tokens_.Reserve(1));
    RETURN_IF_ERROR(all_tokens_.Reserve(g));
    RETURN_IF_ERROR(ops_.CopyIn(own_tokens_.data(), &tokens, 1));
    RETURN_IF_ERROR(ops_.Finish());
    const absl::Time start = absl::Now();
    RETURN_IF_ERROR(comm_.AllGatherV(absl::Span<const int64_t>(own_tokens_.data(), 1),
                                     std::vector<int64_t>(g, 1),
                                     absl::Span<int64_t>(all_tokens_.data(), g)));
    pass_wait_seconds_ = absl::ToDoubleSeconds(absl::Now() - start);  // For the first MoE layer.
    std::vector<int64_t> all(g);
    RETURN_IF_ERROR(ops_.CopyOut(all.data(), all_tokens_.data(), g));
    for (int r = 0; r < g; ++r) {
      if (all[r] < 0 || (r == comm_.rank() && all[r] != tokens)) {
        return absl::InternalError(
            absl::StrCat("rank ", r, " announced a pass of ", all[r], " tokens"));
      }
    }
    rank_tokens_ = std::move(all);
    return absl::OkStatus();
  }
  // Every rank's tokens at the next Run (all ranks know them: Attention-TP's chunk sizes); empty:
  // not known (the two-collective exchange).
  void SetRankTokens(absl::Span<const int64_t> tokens) {
    rank_tokens_.assign(tokens.begin(), tokens.end());
  }

  // out [tokens, hidden] (Ops memory) = Σ_j weights[t, j] · expert_{ids[t, j]}(h[t]), the experts
  // run where the placement serves them. `ids`/`weights`: the tokens' routing on the host.
  // Adds each token's activations served on this rank, and all of them, to row_local/row_all,
  // and what the layer did to `counters` (CountExchange, as the CPU exchange; wall times of the
  // phases, device work included). `during_combine` (may be empty): device work independent of
  // the exchange, queued before the combine's collective so the device runs it meanwhile (the
  // shared expert).
  absl::Status Run(int moe_index, const LayerView& w, const float* h, int64_t tokens,
                   const std::vector<int32_t>& ids, const std::vector<float>& weights, float* out,
                   std::vector<int32_t>& row_local, std::vector<int32_t>& row_all,
                   MoeLayerCounters& counters,
                   const std::function<absl::Status()>& during_combine = {}) {
    const int g = comm_.size(), me = comm_.rank(), k = c_.top_k;
    const int64_t hidden = c_.hidden_size;
    absl::Time start = absl::Now();
    ++counters.calls;
    // The pass's token-count gather (BeginPass), part of the first MoE layer's dispatch wait.
    counters.dispatch_wait_seconds += pass_wait_seconds_;
    counters.dispatch_seconds += pass_wait_seconds_;
    pass_wait_seconds_ = 0;
    served_ = 0;
    served_per_expert_.assign(c_.num_experts, 0);

    // Which rows go where, in rank order, with their expert ids and gate weights for their
    // destination (engine/parallel/dispatch_plan.h, shared with the CPU exchange).
    std::optional<planner::HolderChoice> choice;
    std::vector<int64_t> recv_rows(g);
    bool rows_known = false;  // From the gathered routing: no row-count exchange.
    if (holder_choice_) {
      ASSIGN_OR_RETURN(const bool gather, GatherRouting(tokens));
      if (gather) {
        ASSIGN_OR_RETURN(choice, ChooseHoldersFromRouting(moe_index, ids, recv_rows, counters));
        rows_known = true;
        ++counters.routing_gathers;
      } else {
        ASSIGN_OR_RETURN(choice, ChooseHolders(moe_index, ids, counters));
      }
      holder_load_ = choice->load();
    }
    const DispatchPlan plan =
        PlanDispatch(placement_, moe_index, me, k, ids, weights, choice ? &*choice : nullptr);
    home_devices_ = plan.home_device;
    for (int64_t t = 0; t < tokens; ++t) {
      row_local[t] += plan.local_per_token[t];
      row_all[t] += k;
    }
    if (node_ != nullptr) {  // Node-level dedup: node_exchange.h moves the rows.
      counters.tokens += tokens;
      counters.local_activations += plan.local_activations;
      counters.remote_activations += plan.remote_activations;
      counters.dispatch_seconds += Seconds(start);  // The plan (host); the stages time their own.
      if (during_combine) {  // The shared expert: the combine's side work, as below.
        RETURN_IF_ERROR(during_combine());
        counters.combine_seconds += Seconds(start);
      }
      const bool stacked = w.stacked.gate != nullptr;
      RETURN_IF_ERROR(node_->Run(
          plan, h, tokens,
          [&](const float* x, const int32_t* ids, const float* weights, int64_t rows,
              float* results) -> absl::Status {
            RETURN_IF_ERROR(Reserve(0, rows, 0, stacked));
            return ServeRows(moe_index, w, x, ids, weights, rows, results, /*slot=*/1);
          },
          out, counters));
      AddServed(counters);
      return absl::OkStatus();
    }
    // This rank's own rows never enter the collectives: [self_at, self_at + self) of the plan.
    const std::vector<int64_t>& send_rows = plan.send_rows;
    int64_t self_at = 0;
    for (int d = 0; d < me; ++d) self_at += send_rows[d];
    const int64_t self = send_rows[me];
    const int64_t planned = static_cast<int64_t>(plan.send_index.size());
    const int64_t sent_total = planned - self;
    std::vector<int64_t> to_peers = send_rows;
    to_peers[me] = 0;

    // Row counts first, unless the gathered routing gave them (through Ops memory: an NCCL group
    // reads device buffers only).
    if (!rows_known) {
      RETURN_IF_ERROR(send_counts_.Reserve(g));
      RETURN_IF_ERROR(recv_counts_.Reserve(g));
      RETURN_IF_ERROR(ops_.CopyIn(send_counts_.data(), to_peers.data(), g));
      const std::vector<int64_t> ones(g, 1);
      RETURN_IF_ERROR(ops_.Finish());  // The collectives run on their own stream.
      absl::Time wait = absl::Now();
      RETURN_IF_ERROR(comm_.AllToAllV(absl::Span<const int64_t>(send_counts_.data(), g), ones,
                                      absl::Span<int64_t>(recv_counts_.data(), g), ones));
      counters.dispatch_wait_seconds += Seconds(wait);
      RETURN_IF_ERROR(ops_.CopyOut(recv_rows.data(), recv_counts_.data(), g));
    }
    int64_t received = 0;
    for (int d = 0; d < g; ++d) {
      if (recv_rows[d] < 0 || (d == me && recv_rows[d] != 0)) {
        return absl::InternalError(
            absl::StrCat("peer ", d, " announced ", recv_rows[d], " rows for rank ", me));
      }
      received += recv_rows[d];
    }

    // The plan's rows, ids and weights: this rank's own first, then the peers' in rank order.
    // Without overlap the received rows follow a copy of this rank's own (`front` of them), and
    // one ServeRows runs them all.
    constexpr bool kOverlap = OpsOverlapCollectives<Ops>::value;
    const int64_t front = kOverlap ? 0 : self;
    RETURN_IF_ERROR(Reserve(planned, received + front, self, w.stacked.gate != nullptr));
    const std::vector<int32_t> index = SelfFirst(plan.send_index, self_at, self, 1);
    RETURN_IF_ERROR(ops_.CopyIn(send_index_.data(), index.data(), planned));
    const std::vector<int32_t> send_ids = SelfFirst(plan.send_ids, self_at, self, k);
    const std::vector<float> send_weights = SelfFirst(plan.send_weights, self_at, self, k);
    RETURN_IF_ERROR(ops_.CopyIn(send_ids_.data(), send_ids.data(), planned * k));
    RETURN_IF_ERROR(ops_.CopyIn(send_weights_.data(), send_weights.data(), planned * k));
    RETURN_IF_ERROR(
        ops_.GatherRowsByIndex(h, send_index_.data(), planned, hidden, send_rows_.data()));
    RETURN_IF_ERROR(ops_.Finish());
    if constexpr (kOverlap) {
      // This rank's own rows through its experts are queued before the dispatch, so the device
      // computes them while the collective moves the peers' rows (a semantic placement makes
      // them most rows).
      RETURN_IF_ERROR(ServeRows(moe_index, w, send_rows_.data(), send_ids_.data(),
                                send_weights_.data(), self, self_results_.data(), /*slot=*/0));
    } else {
      RETURN_IF_ERROR(ops_.Copy(recv_rows_.data(), send_rows_.data(), self * hidden));
      RETURN_IF_ERROR(ops_.CopyIn(recv_ids_.data(), send_ids.data(), self * k));
      RETURN_IF_ERROR(ops_.CopyIn(recv_weights_.data(), send_weights.data(), self * k));
    }
    // The peers' rows, ids and weights as one collective (each peer's three segments travel
    // together).
    const int64_t peer_at = self;
    const std::vector<int64_t> rows_out = Scaled(to_peers, hidden),
                               rows_in = Scaled(recv_rows, hidden);
    const std::vector<int64_t> slots_out = Scaled(to_peers, k), slots_in = Scaled(recv_rows, k);
    using Part = Communicator::AllToAllPart;
    const Part parts[] = {
        Part::Of(absl::Span<const float>(send_rows_.data() + peer_at * hidden, sent_total * hidden),
                 rows_out, absl::Span<float>(recv_rows_.data() + front * hidden, received * hidden),
                 rows_in),
        Part::Of(absl::Span<const int32_t>(send_ids_.data() + peer_at * k, sent_total * k),
                 slots_out, absl::Span<int32_t>(recv_ids_.data() + front * k, received * k),
                 slots_in),
        Part::Of(absl::Span<const float>(send_weights_.data() + peer_at * k, sent_total * k),
                 slots_out, absl::Span<float>(recv_weights_.data() + front * k, received * k),
                 slots_in)};
    RETURN_IF_ERROR(comm_.AllToAllVParts(parts));
    CountExchange(plan, recv_rows, me, static_cast<int>(hidden), counters, topology_);
    counters.dispatch_seconds += Seconds(start);

    // The peers' rows (without overlap: and this rank's own, in front) through its experts.
    RETURN_IF_ERROR(ServeRows(moe_index, w, recv_rows_.data(), recv_ids_.data(),
                              recv_weights_.data(), front + received, results_.data(),
                              /*slot=*/1));
    RETURN_IF_ERROR(ops_.Finish());
    counters.expert_seconds += Seconds(start);

    // Combine: results back to their owners (the shared expert meanwhile), added in rank order —
    // this rank's own at its place, so the sum is the one a full exchange makes.
    if (during_combine) RETURN_IF_ERROR(during_combine());
    RETURN_IF_ERROR(comm_.AllToAllV(
        absl::Span<const float>(results_.data() + front * hidden, received * hidden),
        Scaled(recv_rows, hidden), absl::Span<float>(back_.data(), sent_total * hidden),
        Scaled(to_peers, hidden)));
    RETURN_IF_ERROR(ops_.Zero(out, tokens * hidden));
    const float* own = kOverlap ? self_results_.data() : results_.data();
    int64_t row = 0;
    for (int d = 0; d < g; ++d) {
      if (d == me) {
        RETURN_IF_ERROR(ops_.ScatterAddRows(out, own, send_index_.data(), self, hidden));
        continue;
      }
      RETURN_IF_ERROR(ops_.ScatterAddRows(out, back_.data() + row * hidden,
                                          send_index_.data() + self + row, send_rows[d], hidden));
      row += send_rows[d];
    }
    RETURN_IF_ERROR(ops_.Finish());
    counters.combine_seconds += Seconds(start);
    AddServed(counters);
    return absl::OkStatus();
  }

  // Per token of the latest Run: the device holding the homes of most of its experts
  // (DispatchPlan::home_device; Attention-TP's history for the A tables).
  const std::vector<int32_t>& home_devices() const { return home_devices_; }
  // The last Run's expert activations per rank under the holder choice (empty without one).
  const std::vector<int64_t>& holder_load() const { return holder_load_; }

 private:
  // Seconds since `start`, which moves to now.
  static double Seconds(absl::Time& start) {
    const absl::Time now = absl::Now();
    const double s = absl::ToDoubleSeconds(now - start);
    start = now;
    return s;
  }

  // This Run's activations through this rank's experts.
  void AddServed(MoeLayerCounters& counters) const {
    counters.served_activations += served_;
    counters.expert_activations.resize(served_per_expert_.size(), 0);
    for (size_t e = 0; e < served_per_expert_.size(); ++e) {
      counters.expert_activations[e] += served_per_expert_[e];
    }
  }

  static std::vector<int64_t> Scaled(const std::vector<int64_t>& rows, int64_t width) {
    std::vector<int64_t> out(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) out[i] = rows[i] * width;
    return out;
  }

  // `v`'s rows [at, at + n) (of `width` values each) first, then the others in order.
  template <typename T>
  static std::vector<T> SelfFirst(const std::vector<T>& v, int64_t at, int64_t n, int64_t width) {
    std::vector<T> out(v.begin() + at * width, v.begin() + (at + n) * width);
    out.insert(out.end(), v.begin(), v.begin() + at * width);
    out.insert(out.end(), v.begin() + (at + n) * width, v.end());
    return out;
  }

  // out [rows, hidden] = each row's gate-weighted sum over its slots that this rank serves (ids
  // `num_experts`: served elsewhere, contributing zero). x [rows, hidden], ids and weights
  // [rows, k]: Ops memory. Queued; returns once the row counts per expert are on the host.
  absl::Status ServeRows(int moe_index, const LayerView& w, const float* x, const int32_t* ids,
                         const float* weights, int64_t rows, float* out, int slot) {
    const int me = comm_.rank(), k = c_.top_k, experts = c_.num_experts;
    const int64_t hidden = c_.hidden_size, inter = c_.moe_intermediate_size, entries = rows * k;
    RETURN_IF_ERROR(ops_.PermuteByExpert({.ids = ids,
                                          .entries = entries,
                                          .experts = experts + 1,
                                          .counts = counts_.data(),
                                          .offsets = offsets_.data(),
                                          .entry_of_position = entry_of_position_.data(),
                                          .position_of_entry = position_of_entry_.data()}));
    std::vector<int64_t> offsets(experts + 2);
    RETURN_IF_ERROR(ops_.CopyOut(offsets.data(), offsets_.data(), experts + 2));
    served_ += offsets[experts];  // Entries of this rank's experts (the rest: served elsewhere).
    for (int e = 0; e < experts; ++e) {
      served_per_expert_[e] += offsets[e + 1] - offsets[e];
      if (offsets[e + 1] > offsets[e] && !placement_.Holds(moe_index, me, e)) {
        return absl::InternalError(absl::StrCat("rank ", me, " was sent rows for expert ", e,
                                                " of MoE layer ", moe_index,
                                                ", which it does not hold"));
      }
    }
    RETURN_IF_ERROR(ops_.GatherRows({.x = x,
                                     .entry_of_position = entry_of_position_.data(),
                                     .entries = entries,
                                     .k = k,
                                     .hidden = hidden,
                                     .y = y_.data()}));
    if (w.stacked.gate != nullptr) {
      RETURN_IF_ERROR(StackedExperts(w.stacked, offsets, hidden, inter, slot));
    } else {
      RETURN_IF_ERROR(RunGroupedExperts(ops_, offsets, experts, w.experts, y_.data(), g_.data(),
                                        u_.data(), z_.data(), hidden, inter));
    }
    RETURN_IF_ERROR(ops_.Zero(z_.data() + offsets[experts] * hidden,
                              (offsets[experts + 1] - offsets[experts]) * hidden));
    return ops_.CombineRows({.y = z_.data(),
                             .weights = weights,
                             .position_of_entry = position_of_entry_.data(),
                             .tokens = rows,
                             .k = k,
                             .hidden = hidden,
                             .out = out});
  }

  // The rows of this rank's experts (y_, grouped by expert id: `offsets` [experts + 2]) through
  // its stacked bf16 experts as one grouped call into z_: the stack holds the rank's experts in
  // id order and the others have no rows (checked), so each stacked expert's rows start where
  // the permutation put its id's.
  // `slot`: which of a Run's two calls (their host offsets must outlive the queued copy).
  absl::Status StackedExperts(const StackedExpertsView& stack, const std::vector<int64_t>& offsets,
                              int64_t hidden, int64_t inter, int slot) {
    const int experts = c_.num_experts;
    const int n = stack.experts.empty() ? experts : static_cast<int>(stack.experts.size());
    std::vector<int64_t>& starts = stack_starts_[slot];
    starts.assign(n + 1, 0);
    for (int i = 0; i < n; ++i) starts[i] = offsets[stack.experts.empty() ? i : stack.experts[i]];
    starts[n] = offsets[experts];
    const int64_t rows = offsets[experts];
    RETURN_IF_ERROR(stack_offsets_.Reserve(n + 1));
    RETURN_IF_ERROR(ops_.CopyIn(stack_offsets_.data(), starts.data(), n + 1));
    RETURN_IF_ERROR(ops_.RoundToBf16(y_.data(), rows * hidden, y16_.data()));
    RETURN_IF_ERROR(ops_.GroupedSwiGlu({.x = y16_.data(),
                                        .offsets = stack_offsets_.data(),
                                        .experts = n,
                                        .rows = rows,
                                        .hidden = hidden,
                                        .inter = inter,
                                        .gate = stack.gate,
                                        .up = stack.up,
                                        .down = stack.down,
                                        .act = g_.data(),
                                        .out = z_.data()}));
    return absl::OkStatus();
  }

  // Whether this Run all-gathers the routing: the ranks' token counts are known (the same on
  // every rank, so all decide alike) and their routing is small enough.
  absl::StatusOr<bool> GatherRouting(int64_t tokens) const {
    if (rank_tokens_.empty() || routing_gather_max_bytes_ <= 0) return false;
    const int g = comm_.size(), me = comm_.rank();
    if (static_cast<int>(rank_tokens_.size()) != g || rank_tokens_[me] != tokens) {
      return absl::InternalError(absl::StrCat("rank ", me, " runs ", tokens,
                                              " tokens at a MoE layer, not the count its peers "
                                              "were given"));
    }
    int64_t total = 0;
    for (int64_t t : rank_tokens_) total += t;
    return total * c_.top_k * int64_t{sizeof(int32_t)} <= routing_gather_max_bytes_;
  }

  // The choice from every rank's routing (all-gathered, [Σ tokens × k], rank order), and the rows
  // each peer sends this rank under it (recv_rows; DispatchRows on the peer's routing).
  absl::StatusOr<planner::HolderChoice> ChooseHoldersFromRouting(int moe_index,
                                                                 const std::vector<int32_t>& ids,
                                                                 std::vector<int64_t>& recv_rows,
                                                                 MoeLayerCounters& counters) {
    const int g = comm_.size(), me = comm_.rank(), n = c_.num_experts, k = c_.top_k;
    std::vector<int64_t> sizes(g);
    int64_t total = 0;
    for (int r = 0; r < g; ++r) total += sizes[r] = rank_tokens_[r] * k;
    RETURN_IF_ERROR(own_routing_.Reserve(std::max<int64_t>(1, sizes[me])));
    RETURN_IF_ERROR(routing_.Reserve(std::max<int64_t>(1, total)));
    std::vector<int32_t> all(total);
    if (total > 0) {  // Every rank knows the total: all skip an empty gather alike.
      RETURN_IF_ERROR(ops_.CopyIn(own_routing_.data(), ids.data(), sizes[me]));
      RETURN_IF_ERROR(ops_.Finish());
      absl::Time wait = absl::Now();
      RETURN_IF_ERROR(comm_.AllGatherV(absl::Span<const int32_t>(own_routing_.data(), sizes[me]),
                                       sizes, absl::Span<int32_t>(routing_.data(), total)));
      counters.dispatch_wait_seconds += Seconds(wait);
      RETURN_IF_ERROR(ops_.CopyOut(all.data(), routing_.data(), total));
    }
    std::vector<int32_t> demand(int64_t{g} * n, 0);
    int64_t at = 0;
    for (int r = 0; r < g; ++r) {
      for (int64_t i = at; i < at + sizes[r]; ++i) {
        if (all[i] < 0 || all[i] >= n) {
          return absl::InternalError(
              absl::StrCat("peer ", r, " announced a routing to expert ", all[i], " of ", n));
        }
        ++demand[int64_t{r} * n + all[i]];
      }
      at += sizes[r];
    }
    planner::HolderChoice choice = planner::ChooseHolders(placement_, moe_index, demand);
    at = 0;
    for (int r = 0; r < g; ++r) {
      recv_rows[r] =
          r == me ? 0
                  : DispatchRows(placement_, moe_index, r, k,
                                 absl::MakeConstSpan(all.data() + at, sizes[r]), &choice)[me];
      at += sizes[r];
    }
    return choice;
  }

  // Every rank's activations per expert (all-gathered through Ops memory: an NCCL group reads
  // device buffers only), and the holder choice they all compute from them.
  absl::StatusOr<planner::HolderChoice> ChooseHolders(int moe_index,
                                                      const std::vector<int32_t>& ids,
                                                      MoeLayerCounters& counters) {
    const int g = comm_.size(), n = c_.num_experts;
    const std::vector<int32_t> mine = planner::ExpertDemand(ids, n);
    RETURN_IF_ERROR(own_demand_.Reserve(n));
    RETURN_IF_ERROR(demand_.Reserve(int64_t{g} * n));
    RETURN_IF_ERROR(ops_.CopyIn(own_demand_.data(), mine.data(), n));
    RETURN_IF_ERROR(ops_.Finish());
    absl::Time wait = absl::Now();
    RETURN_IF_ERROR(comm_.AllGatherV(absl::Span<const int32_t>(own_demand_.data(), n),
                                     std::vector<int64_t>(g, n),
                                     absl::Span<int32_t>(demand_.data(), int64_t{g} * n)));
    counters.dispatch_wait_seconds += Seconds(wait);
    std::vector<int32_t> demand(int64_t{g} * n);
    RETURN_IF_ERROR(ops_.CopyOut(demand.data(), demand_.data(), demand.size()));
    for (size_t i = 0; i < demand.size(); ++i) {
      if (demand[i] < 0) {
        return absl::InternalError(absl::StrCat("peer ", i / n, " announced ", demand[i],
                                                " activations of expert ", i % n));
      }
    }
    return planner::ChooseHolders(placement_, moe_index, demand);
  }

  // `planned`: rows of the plan (this rank's own included); `received` from peers; `self` own.
  // `stacked`: the layer's experts run as one bf16 grouped call (which needs the rows in bf16).
  absl::Status Reserve(int64_t planned, int64_t received, int64_t self, bool stacked) {
    const int64_t hidden = c_.hidden_size, k = c_.top_k;
    const int64_t entries = std::max(received, self) * k;  // Scratch of one ServeRows.
    // (Without overlap `received` counts this rank's own rows too: the most one call serves.)
    RETURN_IF_ERROR(send_index_.Reserve(planned));
    RETURN_IF_ERROR(send_rows_.Reserve(planned * hidden));
    RETURN_IF_ERROR(back_.Reserve(planned * hidden));
    RETURN_IF_ERROR(send_ids_.Reserve(planned * k));
    RETURN_IF_ERROR(send_weights_.Reserve(planned * k));
    if constexpr (OpsOverlapCollectives<Ops>::value) {  // Else its results join results_.
      RETURN_IF_ERROR(self_results_.Reserve(self * hidden));
    }
    RETURN_IF_ERROR(recv_rows_.Reserve(received * hidden));
    RETURN_IF_ERROR(results_.Reserve(received * hidden));
    RETURN_IF_ERROR(recv_ids_.Reserve(received * k));
    RETURN_IF_ERROR(recv_weights_.Reserve(received * k));
    RETURN_IF_ERROR(entry_of_position_.Reserve(entries));
    RETURN_IF_ERROR(position_of_entry_.Reserve(entries));
    RETURN_IF_ERROR(counts_.Reserve(c_.num_experts + 1));
    RETURN_IF_ERROR(offsets_.Reserve(c_.num_experts + 2));
    RETURN_IF_ERROR(y_.Reserve(entries * hidden));
    if (stacked) RETURN_IF_ERROR(y16_.Reserve(entries * hidden));
    RETURN_IF_ERROR(z_.Reserve(entries * hidden));
    RETURN_IF_ERROR(g_.Reserve(entries * c_.moe_intermediate_size));
    return u_.Reserve(entries * c_.moe_intermediate_size);
  }

  const model::ModelConfig& c_;
  const planner::Placement& placement_;
  Communicator& comm_;
  Ops& ops_;
  const bool holder_choice_;
  const int64_t routing_gather_max_bytes_;
  const planner::Topology* const topology_;  // Null: one node.
  std::unique_ptr<NodeExchange<Ops>> node_;  // Set with several nodes of several ranks.
  std::vector<int64_t> rank_tokens_;  // Every rank's tokens at the next Run; empty: unknown.
  double pass_wait_seconds_ = 0;      // BeginPass's collective, not yet in a layer's counters.
  Array<int64_t> own_tokens_, all_tokens_;  // BeginPass's all-gather.
  Array<int32_t> own_routing_, routing_;    // The gathered routing.
  int64_t served_ = 0;                      // This Run's entries through this rank's experts.
  std::vector<int64_t> served_per_expert_;  // ... per expert id.
  std::vector<int32_t> home_devices_;
  std::vector<int64_t> holder_load_;
  Array<int32_t> own_demand_, demand_;  // The holder choice's all-gather.
  Array<int64_t> send_counts_, recv_counts_, counts_, offsets_, entry_of_position_,
      position_of_entry_;
  Array<int32_t> send_index_, send_ids_, recv_ids_;
  Array<float> send_rows_, recv_rows_, send_weights_, recv_weights_, results_, back_, y_, z_, g_,
      u_, self_results_;
  Array<uint16_t> y16_;                   // The rows in bf16 (stacked experts).
  Array<int64_t> stack_offsets_;          // Stacked expert → its first row.
  std::vector<int64_t> stack_starts_[2];  // Their host copies, per ServeRows call of a Run.
};

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_EP_EXCHANGE_H_
