#include "engine/forward/model_view.h"

namespace semmoe::engine::forward {
namespace {

LinearView Linear(const model::Matrix& m) {
  if (m.size() == 0) return {};
  return {.w = m.data(), .rows = m.rows(), .cols = m.cols()};
}
LinearView Linear(const model::LinearWeight& l) {
  LinearView v = Linear(l.w);
  if (!l.bf16.empty()) v.exact16 = l.bf16.data();
  return v;
}
MlpView Mlp(const model::MlpWeights& m) { return {Linear(m.gate), Linear(m.up), Linear(m.down)}; }
const float* OrNull(const model::Vector& v) { return v.size() > 0 ? v.data() : nullptr; }

}  // namespace

ModelView HostView(const model::ModelWeights& weights) {
  ModelView view;
  view.embed = weights.embed.data();
  for (const model::LayerWeights& w : weights.layers) {
    LayerView l;
    l.input_norm = w.input_norm.data();
    l.post_attention_norm = w.post_attention_norm.data();
    l.q = Linear(w.q);
    l.k = Linear(w.k);
    l.v = Linear(w.v);
    l.o = Linear(w.o);
    l.q_bias = OrNull(w.q_bias);
    l.k_bias = OrNull(w.k_bias);
    l.v_bias = OrNull(w.v_bias);
    l.q_norm = OrNull(w.q_norm);
    l.k_norm = OrNull(w.k_norm);
    l.mla = MlaView{.q_a = Linear(w.mla.q_a),
                    .q_a_norm = OrNull(w.mla.q_a_norm),
                    .q_b = Linear(w.mla.q_b),
                    .kv_a = Linear(w.mla.kv_a),
                    .kv_a_norm = OrNull(w.mla.kv_a_norm),
                    .kv_b = Linear(w.mla.kv_b)};
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
  view.lm_head = Linear(weights.lm_head);
  return view;
}

}  // namespace semmoe::engine::forward
