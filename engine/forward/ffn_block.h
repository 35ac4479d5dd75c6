// FfnBlock<Ops>: the feed-forward half of a layer in the op-set forward
// (engine/forward/forward_runner.h, whose Ops it uses): x += FFN(norm(x)) over the pass's rows —
// all of them, or this rank's Attention-TP chunk. A dense layer runs its MLP. A MoE layer runs the
// router and gating, then the routed experts: on this device a stable permutation of the (token,
// slot) rows by expert, the experts over them, the weighted combine back into token order — with
// stacked bf16 experts (engine/forward/bf16_view.h) one grouped call (GroupedSwiGlu) whose row
// offsets stay where PermuteByExpert wrote them (no copy to the host, no per-expert launches),
// otherwise one product per expert and projection (the row counts come back to the host once per
// layer); under expert parallelism where the placement serves them (engine/forward/ep_exchange.h).
// The routing rule is the model's (model::RoutingRule: softmax or DeepSeek's sigmoid,
// group-limited, bias-corrected). Last the shared expert — gated (qwen2_moe) or not (DeepSeek) —
// which under expert parallelism is queued while the combine moves rows.
//
// Thread-compatible.
#ifndef SEMMOE_ENGINE_FORWARD_FFN_BLOCK_H_
#define SEMMOE_ENGINE_FORWARD_FFN_BLOCK_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/status_macros.h"
#include "engine/forward/ep_exchange.h"
#include "engine/forward/grouped_experts.h"
#include "engine/forward/model_view.h"
#include "engine/model/routing.h"
#include "engine/model/forward_io.h"
#include "engine/parallel/moe_layer_counters.h"
#include "engine/text/config.h"
#include "kernels/op_args.h"

namespace semmoe::engine::forward {

template <typename Ops>
class FfnBlock {
 public:
  template <typename T>
  using Array = typename Ops::template Array<T>;

  // Under expert parallelism: the exchange and what it adds to (all borrowed, outliving this).
  struct Exchange {
    EpExchange<Ops>* ep = nullptr;                      // Null: every expert on this device.
    const std::vector<int>* moe_index = nullptr;        // Model layer → placement layer.
    std::vector<int32_t>* row_local = nullptr;          // Per token of the pass: activations here,
    std::vector<int32_t>* row_all = nullptr;            // and all.
    std::vector<MoeLayerCounters>* counters = nullptr;  // Per placement layer.
  };

  // Borrows `ops` (outlives this).
  FfnBlock(const model::ModelConfig& config, Ops& ops, Exchange exchange = {})
      : c_(config), ops_(ops), ex_(exchange) {}

  // Grows the buffers to a pass of `tokens` rows.
  absl::Status Reserve(int64_t tokens) {
    const int64_t hidden = c_.hidden_size, entries = tokens * std::max(1, c_.top_k);
    const int64_t inter =
        std::max({entries * c_.moe_intermediate_size, tokens * c_.intermediate_size,
                  tokens * c_.shared_expert_intermediate_size});
    for (Array<float>* a : {&h_, &moe_, &shared_}) RETURN_IF_ERROR(a->Reserve(tokens * hidden));
    RETURN_IF_ERROR(router_logits_.Reserve(tokens * std::max(1, c_.num_experts)));
    RETURN_IF_ERROR(gate_weights_.Reserve(entries));
    RETURN_IF_ERROR(expert_ids_.Reserve(entries));
    RETURN_IF_ERROR(entry_of_position_.Reserve(entries));
    RETURN_IF_ERROR(position_of_entry_.Reserve(entries));
    RETURN_IF_ERROR(counts_.Reserve(std::max(1, c_.num_experts)));
    RETURN_IF_ERROR(offsets_.Reserve(c_.num_experts + 1));
    for (Array<float>* a : {&y_, &z_}) RETURN_IF_ERROR(a->Reserve(entries * hidden));
    RETURN_IF_ERROR(y16_.Reserve(entries * hidden));
    for (Array<float>* a : {&g_, &u_}) RETURN_IF_ERROR(a->Reserve(inter));
    return shared_gate_.Reserve(tokens);
  }

  // The addresses of its buffers (a decode graph's signature).
  void AppendPointers(std::vector<const void*>& out) const {
    for (const void* p :
         {static_cast<const void*>(h_.data()), static_cast<const void*>(router_logits_.data()),
          static_cast<const void*>(gate_weights_.data()), static_cast<const void*>(y_.data()),
          static_cast<const void*>(g_.data()), static_cast<const void*>(u_.data()),
          static_cast<const void*>(z_.data()), static_cast<const void*>(moe_.data()),
          static_cast<const void*>(shared_.data()), static_cast<const void*>(shared_gate_.data()),
          static_cast<const void*>(expert_ids_.data()), static_cast<const void*>(counts_.data()),
          static_cast<const void*>(offsets_.data()),
          static_cast<const void*>(entry_of_position_.data()),
          static_cast<const void*>(position_of_entry_.data()),
          static_cast<const void*>(y16_.data())}) {
      out.push_back(p);
    }
  }

  // x += FFN(norm(x)) over `tokens` rows of x (Ops memory): model layer `layer`, weights `w`.
  // With `routing`, the layer's top-k ids and gate weights for those rows go there.
  absl::Status Run(int layer, const LayerView& w, float* x, int64_t tokens,
                   model::Routing* routing) {
    const int64_t hidden = c_.hidden_size;
    RETURN_IF_ERROR(ops_.Copy(h_.data(), x, tokens * hidden));
    RETURN_IF_ERROR(
        ops_.RmsNorm(h_.data(), tokens, hidden, hidden, w.post_attention_norm, c_.rms_norm_eps));
    if (!w.is_moe) {
      RETURN_IF_ERROR(Mlp(h_.data(), tokens, w.dense, moe_.data()));
      return ops_.AddInPlace(x, moe_.data(), tokens * hidden);
    }
    const int k = c_.top_k;
    const int64_t entries = tokens * k;
    RETURN_IF_ERROR(ops_.Linear(h_.data(), tokens, w.router, router_logits_.data()));
    kernels::RouterGatingArgs gating = model::RoutingRule(c_, w.router_bias);
    gating.logits = router_logits_.data();
    gating.tokens = tokens;
    gating.ids = expert_ids_.data();
    gating.weights = gate_weights_.data();
    RETURN_IF_ERROR(ops_.RouterGating(gating));
    // The shared expert and its gate's product (under EP queued while the combine moves rows).
    const bool gated = !w.shared_expert_gate.empty();
    auto shared_expert = [&]() -> absl::Status {
      if (!w.has_shared_expert) return absl::OkStatus();
      RETURN_IF_ERROR(Mlp(h_.data(), tokens, w.shared_expert, shared_.data()));
      if (!gated) return absl::OkStatus();
      return ops_.Linear(h_.data(), tokens, w.shared_expert_gate, shared_gate_.data());
    };
    if (ex_.ep != nullptr) {
      const int moe = (*ex_.moe_index)[layer];
      std::vector<int32_t> ids(entries);
      std::vector<float> weights(entries);
      RETURN_IF_ERROR(ops_.CopyOut(ids.data(), expert_ids_.data(), entries));
      RETURN_IF_ERROR(ops_.CopyOut(weights.data(), gate_weights_.data(), entries));
      RETURN_IF_ERROR(ex_.ep->Run(moe, w, h_.data(), tokens, ids, weights, moe_.data(),
                                  *ex_.row_local, *ex_.row_all, (*ex_.counters)[moe],
                                  shared_expert));
    } else {
      RETURN_IF_ERROR(LocalExperts(w, tokens));
      RETURN_IF_ERROR(shared_expert());
    }
    if (w.has_shared_expert && gated) {
      RETURN_IF_ERROR(
          ops_.SigmoidGateAdd(moe_.data(), shared_.data(), shared_gate_.data(), tokens, hidden));
    } else if (w.has_shared_expert) {  // DeepSeek's: ungated.
      RETURN_IF_ERROR(ops_.AddInPlace(moe_.data(), shared_.data(), tokens * hidden));
    }
    RETURN_IF_ERROR(ops_.AddInPlace(x, moe_.data(), tokens * hidden));
    if (routing != nullptr) {
      routing->top_k = k;
      routing->expert_ids.resize(entries);
      routing->weights.resize(entries);
      RETURN_IF_ERROR(ops_.CopyOut(routing->expert_ids.data(), expert_ids_.data(), entries));
      RETURN_IF_ERROR(ops_.CopyOut(routing->weights.data(), gate_weights_.data(), entries));
    }
    return absl::OkStatus();
  }

 private:
  // out = down(silu(gate(x)) ⊙ up(x)), through g_ / u_.
  absl::Status Mlp(const float* x, int64_t rows, const MlpView& mlp, float* out) {
    RETURN_IF_ERROR(ops_.Linear(x, rows, mlp.gate, g_.data()));
    RETURN_IF_ERROR(ops_.Linear(x, rows, mlp.up, u_.data()));
    RETURN_IF_ERROR(ops_.SiluMul(g_.data(), u_.data(), rows * mlp.gate.rows));
    return ops_.Linear(g_.data(), rows, mlp.down, out);
  }

  // The routed experts of a one-device MoE layer: the (token, slot) rows permuted by expert and
  // gathered, the experts over them, the weighted combine back into token order. Stacked bf16
  // experts run as one grouped call whose offsets stay in Ops memory (it is sized by the rows'
  // count, tokens × k, which the host knows); otherwise one product per expert and projection,
  // whose shapes need the offsets on the host.
  absl::Status LocalExperts(const LayerView& w, int64_t tokens) {
    const int experts = c_.num_experts, k = c_.top_k;
    const int64_t entries = tokens * k, hidden = c_.hidden_size, inter = c_.moe_intermediate_size;
    RETURN_IF_ERROR(ops_.PermuteByExpert({.ids = expert_ids_.data(),
                                          .entries = entries,
                                          .experts = experts,
                                          .counts = counts_.data(),
                                          .offsets = offsets_.data(),
                                          .entry_of_position = entry_of_position_.data(),
                                          .position_of_entry = position_of_entry_.data()}));
    RETURN_IF_ERROR(ops_.GatherRows({.x = h_.data(),
                                     .entry_of_position = entry_of_position_.data(),
                                     .entries = entries,
                                     .k = k,
                                     .hidden = hidden,
                                     .y = y_.data()}));
    if (w.stacked.gate != nullptr && w.stacked.experts.empty()) {  // Every expert, stacked.
      RETURN_IF_ERROR(ops_.RoundToBf16(y_.data(), entries * hidden, y16_.data()));
      RETURN_IF_ERROR(ops_.GroupedSwiGlu({.x = y16_.data(),
                                          .offsets = offsets_.data(),
                                          .experts = experts,
                                          .rows = entries,
                                          .hidden = hidden,
                                          .inter = inter,
                                          .gate = w.stacked.gate,
                                          .up = w.stacked.up,
                                          .down = w.stacked.down,
                                          .act = g_.data(),
                                          .out = z_.data()}));
    } else {
      std::vector<int64_t> offsets(experts + 1);  // The GEMM shapes: the host needs them.
      RETURN_IF_ERROR(ops_.CopyOut(offsets.data(), offsets_.data(), experts + 1));
      RETURN_IF_ERROR(RunGroupedExperts(ops_, offsets, experts, w.experts, y_.data(), g_.data(),
                                        u_.data(), z_.data(), hidden, inter));
    }
    return ops_.CombineRows({.y = z_.data(),
                             .weights = gate_weights_.data(),
                             .position_of_entry = position_of_entry_.data(),
                             .tokens = tokens,
                             .k = k,
                             .hidden = hidden,
                             .out = moe_.data()});
  }

  const model::ModelConfig& c_;
  Ops& ops_;
  const Exchange ex_;
  Array<float> h_, router_logits_, gate_weights_, y_, g_, u_, z_, moe_, shared_, shared_gate_;
  Array<int32_t> expert_ids_;
  Array<int64_t> counts_, offsets_, entry_of_position_, position_of_entry_;
  Array<uint16_t> y16_;  // The permuted rows in bf16 (stacked experts).
};

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_FFN_BLOCK_H_
