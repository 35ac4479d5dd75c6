#include "engine/gpu/model_view.h"

namespace semmoe::engine::gpu {
namespace {

LinearView Linear(const model::Matrix& m) {
  if (m.size() == 0) return {};
  return {.w = m.data(), .rows = m.rows(), .cols = m.cols()};
}
MlpView Mlp(const model::MlpWeights& m) {
  return {Linear(m.gate.w), Linear(m.up.w), Linear(m.down.w)};
}
const float* OrNull(const model::Vector& v) { return v.size() > 0 ? v.data() : nullptr; }

}  // namespace

ModelView HostView(const model::ModelWeights& weights) {
  ModelView view;
  view.embed = weights.embed.data();
  for (const model::LayerWeights& w : weights.layers) {
    LayerView l;
    l.input_norm = w.input_norm.data();
    l.post_attention_norm = w.post_attention_norm.data();
    l.q = Linear(w.q.w);
    l.k = Linear(w.k.w);
    l.v = Linear(w.v.w);
    l.o = Linear(w.o.w);
    l.q_bias = OrNull(w.q_bias);
    l.k_bias = OrNull(w.k_bias);
    l.v_bias = OrNull(w.v_bias);
    l.q_norm = OrNull(w.q_norm);
    l.k_norm = OrNull(w.k_norm);
    l.mla = MlaView{.q_a = Linear(w.mla.q_a.w),
                    .q_a_norm = OrNull(w.mla.q_a_norm),
                    .q_b = Linear(w.mla.q_b.w),
                    .kv_a = Linear(w.mla.kv_a.w),
                    .kv_a_norm = OrNull(w.mla.kv_a_norm),
                    .kv_b = Linear(w.mla.kv_b.w)};
    l.is_moe = w.is_moe;
    if (w.is_moe) {
      l.router = Linear(w.router);
      l.router_bias = OrNull(w.router_bias);
      for (const model::MlpWeights& e : w.experts) l.experts.push_back(Mlp(e));
      l.has_shared_expert = w.shared_expert.loaded();
      if (l.has_shared_expert) {
        l.shared_expert = Mlp(w.shared_expert);
        l.shared_expert_gate = Linear(w.shared_expert_gate);
      }
    } else {
      l.dense = Mlp(w.dense);
    }
    view.layers.push_back(std::move(l));
  }
  view.final_norm = weights.final_norm.data();
  view.lm_head = Linear(weights.lm_head.w);
  return view;
}

}  // namespace semmoe::engine::gpu
