// ModelView: pointers to a model's parameters wherever they live (GPU memory for the GPU op set,
// the host's ModelWeights for the CPU op set), in the checkpoint's layouts: linear weights
// [out, in], f32 — or, for the bf16 forward (engine/forward/bf16_view.h), as bf16 bits, with a
// MoE layer's experts also stacked for one grouped call.
#ifndef SEMMOE_ENGINE_FORWARD_MODEL_VIEW_H_
#define SEMMOE_ENGINE_FORWARD_MODEL_VIEW_H_

#include <cstdint>
#include <vector>

#include "engine/model/weights.h"

namespace semmoe::engine::forward {

// Block-scaled FP8 (engine/model/weights.h Fp8Weight) where the parameters live: a matrix's
// codes [rows, cols] and scales [ceil(rows / block_rows), ceil(cols / block_cols)].
struct Fp8View {
  const uint8_t* codes = nullptr;
  const float* scales = nullptr;
  int block_rows = 0, block_cols = 0;
};

struct LinearView {  // y = x · wᵀ.
  const float* w = nullptr;
  // Or bf16 bits of the same [out, in] matrix: the product rounds x to bf16 and accumulates in
  // f32 (tensor cores on the GPU). At most one of w and w16 is set.
  const uint16_t* w16 = nullptr;
  // With w: the same values as bf16 bits (a BF16 checkpoint's, widened exactly into w), which a
  // product of few rows may read instead — half the bytes, the same result (CpuOps::Linear).
  const uint16_t* exact16 = nullptr;
  // Or FP8 codes and block scales (engine/forward/fp8_view.h: the FP8 forward keeps them and
  // dequantises a layer's to bf16 before its products). Host views carry them beside w when the
  // checkpoint stored FP8; products never read them directly.
  Fp8View fp8;
  int64_t rows = 0, cols = 0;  // out, in.
  bool empty() const { return w == nullptr && w16 == nullptr && fp8.codes == nullptr; }
};

// The experts of a MoE layer this device holds, bf16, stacked: gate and up [n, inter, hidden],
// down [n, hidden, inter] (kernels/op_args.h GroupedSwiGluArgs). Set when the device holds any;
// the layer's experts then run as one grouped call — every expert on one device, or an
// expert-parallel rank's own (engine/forward/ep_exchange.h).
struct StackedExpertsView {
  const uint16_t *gate = nullptr, *up = nullptr, *down = nullptr;
  std::vector<int32_t> experts;  // The stacked experts' ids, ascending; empty: all of them.
  // FP8 forward: the stacks' codes and scales instead ([n, rows, cols] and [n, rows / block,
  // cols / block], blocks rounded up), dequantised into the bf16 stacks above per layer.
  Fp8View gate8, up8, down8;
};

struct MlpView {
  LinearView gate, up, down;
};

// Multi-head latent attention (DeepSeek; engine/model/weights.h MlaWeights). The absorbed form
// reads kv_b per head: W_uk_h = rows [h·(nope + v), + nope) and W_uv_h = the next v rows, each
// [·, kv_lora_rank].
struct MlaView {
  LinearView q_a;                    // Empty without q LoRA (LayerView::q is q_proj).
  const float* q_a_norm = nullptr;   // [q_lora_rank]
  LinearView q_b;                    // [heads × (nope + rope), q_lora_rank]
  LinearView kv_a;                   // [kv_lora_rank + rope, hidden]
  const float* kv_a_norm = nullptr;  // [kv_lora_rank]
  LinearView kv_b;                   // [heads × (nope + v), kv_lora_rank]
};

struct LayerView {
  const float* input_norm = nullptr;
  const float* post_attention_norm = nullptr;
  LinearView q, k, v, o;
  const float *q_bias = nullptr, *k_bias = nullptr, *v_bias = nullptr;  // attention_bias only.
  const float *q_norm = nullptr, *k_norm = nullptr;                     // qk_norm only.
  MlaView mla;                                                          // config.mla only.
  bool is_moe = false;
  MlpView dense;
  LinearView router;
  const float* router_bias = nullptr;  // noaux_tc's correction bias [experts], or null.
  std::vector<MlpView> experts;
  StackedExpertsView stacked;  // bf16 only.
  bool has_shared_expert = false;
  MlpView shared_expert;
  LinearView shared_expert_gate;  // Empty: ungated (DeepSeek's shared experts).
};

struct ModelView {
  const float* embed = nullptr;  // [vocab, hidden]
  std::vector<LayerView> layers;
  const float* final_norm = nullptr;
  LinearView lm_head;
};

// A view of host weights in place (no copy). REQUIRES every expert loaded; `weights` outlives it.
ModelView HostView(const model::ModelWeights& weights);

// The view of parameters held as `Weights`: the host's ModelWeights, or a device's copy with the
// same field names (engine/gpu/gpu_weights.h). `linear` maps each linear layer (and the router)
// to its LinearView (empty when absent), `vector` each norm or bias to its pointer (null when
// absent). A layer has a shared expert when its gate projection has a shape.
template <typename Weights, typename LinearFn, typename VectorFn>
ModelView ViewOf(const Weights& weights, const LinearFn& linear, const VectorFn& vector) {
  auto mlp = [&](const auto& m) { return MlpView{linear(m.gate), linear(m.up), linear(m.down)}; };
  ModelView view;
  view.embed = weights.embed.data();
  for (const auto& w : weights.layers) {
    LayerView& l = view.layers.emplace_back();
    l.input_norm = vector(w.input_norm);
    l.post_attention_norm = vector(w.post_attention_norm);
    l.q = linear(w.q);
    l.k = linear(w.k);
    l.v = linear(w.v);
    l.o = linear(w.o);
    l.q_bias = vector(w.q_bias);
    l.k_bias = vector(w.k_bias);
    l.v_bias = vector(w.v_bias);
    l.q_norm = vector(w.q_norm);
    l.k_norm = vector(w.k_norm);
    l.mla = MlaView{.q_a = linear(w.mla.q_a),
                    .q_a_norm = vector(w.mla.q_a_norm),
                    .q_b = linear(w.mla.q_b),
                    .kv_a = linear(w.mla.kv_a),
                    .kv_a_norm = vector(w.mla.kv_a_norm),
                    .kv_b = linear(w.mla.kv_b)};
    l.is_moe = w.is_moe;
    l.dense = mlp(w.dense);
    l.router = linear(w.router);
    l.router_bias = vector(w.router_bias);
    for (const auto& e : w.experts) l.experts.push_back(mlp(e));
    l.shared_expert = mlp(w.shared_expert);
    l.shared_expert_gate = linear(w.shared_expert_gate);
    l.has_shared_expert = l.shared_expert.gate.rows > 0;
  }
  view.final_norm = vector(weights.final_norm);
  view.lm_head = linear(weights.lm_head);
  return view;
}

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_MODEL_VIEW_H_
