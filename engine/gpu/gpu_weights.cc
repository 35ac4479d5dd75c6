#include "engine/gpu/gpu_weights.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "engine/forward/bf16_view.h"
#include "kernels/cuda/cuda_status.h"

namespace semmoe::engine::gpu {
namespace {

class Uploader {
 public:
  // `bf16`: linear layers get their shapes only (their bf16 copies come after, AttachBf16);
  // `Gate` matrices (the router, the shared-expert gate) are uploaded in f32 regardless.
  explicit Uploader(bool bf16) : bf16_(bf16) {}
  absl::Status Vector(const model::Vector& v, DeviceArray<float>& out) {
    bytes_ += static_cast<int64_t>(v.size()) * 4;
    return out.Assign(v.data(), v.size());
  }
  absl::Status Linear(const model::LinearWeight& l, GpuLinear& out) {
    if (l.empty()) return absl::OkStatus();  // Absent (e.g. q without LoRA): stays empty.
    out.rows = l.rows();
    out.cols = l.cols();
    if (bf16_) return absl::OkStatus();
    if (l.fp8_only()) {
      return absl::InvalidArgumentError(
          "f32 GPU weights need the f32 copies an FP8-only load (the FP8 forward's) does not keep");
    }
    return Gate(l.w, out);
  }
  absl::Status Gate(const model::Matrix& m, GpuLinear& out) {
    if (m.size() == 0) return absl::OkStatus();
    out.rows = m.rows();
    out.cols = m.cols();
    bytes_ += static_cast<int64_t>(m.size()) * 4;
    return out.w.Assign(m.data(), m.size());  // Row-major: [rows, cols] as stored.
  }
  void AddBytes(int64_t bytes) { bytes_ += bytes; }
  absl::Status Mlp(const model::MlpWeights& mlp, GpuMlp& out) {
    RETURN_IF_ERROR(Linear(mlp.gate, out.gate));
    RETURN_IF_ERROR(Linear(mlp.up, out.up));
    return Linear(mlp.down, out.down);
  }
  int64_t bytes() const { return bytes_; }

 private:
  bool bf16_;
  int64_t bytes_ = 0;
};

// Each array a bf16 or FP8 view needs (AttachBf16's store), uploaded and kept: bf16 bits, FP8
// codes, block scales.
struct DeviceStore {
  GpuWeights* self;
  Uploader* up;
  absl::StatusOr<const uint16_t*> operator()(std::vector<uint16_t> v) const {
    return Keep(self->bf16_arrays, v);
  }
  absl::StatusOr<const uint8_t*> operator()(std::vector<uint8_t> v) const {
    return Keep(self->fp8_arrays, v);
  }
  absl::StatusOr<const float*> operator()(std::vector<float> v) const {
    return Keep(self->scale_arrays, v);
  }
  template <typename T>
  absl::StatusOr<const T*> Keep(std::vector<DeviceArray<T>>& kept, const std::vector<T>& v) const {
    kept.emplace_back();
    RETURN_IF_ERROR(kept.back().Assign(v.data(), v.size()));
    up->AddBytes(static_cast<int64_t>(v.size() * sizeof(T)));
    return kept.back().data();
  }
};

}  // namespace

forward::ModelView GpuWeights::View() const {
  if (bf16) return bf16_view;
  return forward::ViewOf(
      *this,
      [](const GpuLinear& l) -> forward::LinearView {
        if (l.rows == 0) return {};
        return {.w = l.w.data(), .rows = l.rows, .cols = l.cols};
      },
      [](const DeviceArray<float>& a) { return a.empty() ? nullptr : a.data(); });
}

absl::StatusOr<std::unique_ptr<GpuWeights>> UploadWeights(const model::ModelConfig& config,
                                                          const model::ModelWeights& weights,
                                                          bool every_expert, bool bf16,
                                                          bool fp8) {
  if (fp8 && !bf16) return absl::InvalidArgumentError("FP8 weights need the bf16 forward");
  if (static_cast<int>(weights.layers.size()) != config.num_layers) {
    return absl::InvalidArgumentError("weights were not loaded for this config");
  }
  auto out = std::make_unique<GpuWeights>();
  Uploader up(bf16);
  RETURN_IF_ERROR(out->embed.Assign(weights.embed.data(), weights.embed.size()));
  out->layers.resize(config.num_layers);
  for (int l = 0; l < config.num_layers; ++l) {
    const model::LayerWeights& w = weights.layers[l];
    GpuLayer& g = out->layers[l];
    RETURN_IF_ERROR(up.Vector(w.input_norm, g.input_norm));
    RETURN_IF_ERROR(up.Vector(w.post_attention_norm, g.post_attention_norm));
    RETURN_IF_ERROR(up.Linear(w.q, g.q));
    RETURN_IF_ERROR(up.Linear(w.k, g.k));
    RETURN_IF_ERROR(up.Linear(w.v, g.v));
    RETURN_IF_ERROR(up.Linear(w.o, g.o));
    RETURN_IF_ERROR(up.Vector(w.q_bias, g.q_bias));
    RETURN_IF_ERROR(up.Vector(w.k_bias, g.k_bias));
    RETURN_IF_ERROR(up.Vector(w.v_bias, g.v_bias));
    RETURN_IF_ERROR(up.Vector(w.q_norm, g.q_norm));
    RETURN_IF_ERROR(up.Vector(w.k_norm, g.k_norm));
    RETURN_IF_ERROR(up.Linear(w.mla.q_a, g.mla.q_a));
    RETURN_IF_ERROR(up.Vector(w.mla.q_a_norm, g.mla.q_a_norm));
    RETURN_IF_ERROR(up.Linear(w.mla.q_b, g.mla.q_b));
    RETURN_IF_ERROR(up.Linear(w.mla.kv_a, g.mla.kv_a));
    RETURN_IF_ERROR(up.Vector(w.mla.kv_a_norm, g.mla.kv_a_norm));
    RETURN_IF_ERROR(up.Linear(w.mla.kv_b, g.mla.kv_b));
    g.is_moe = w.is_moe;
    if (!w.is_moe) {
      RETURN_IF_ERROR(up.Mlp(w.dense, g.dense));
      continue;
    }
    RETURN_IF_ERROR(up.Gate(w.router, g.router));
    RETURN_IF_ERROR(up.Vector(w.router_bias, g.router_bias));
    g.experts.resize(w.experts.size());
    for (size_t e = 0; e < w.experts.size(); ++e) {
      if (!w.experts[e].loaded() && !every_expert) continue;  // Another rank's.
      if (!w.experts[e].loaded()) {
        return absl::FailedPreconditionError(
            absl::StrCat("layer ", l, " expert ", e,
                         " is not loaded; the GPU forward needs every expert on one device"));
      }
      RETURN_IF_ERROR(up.Mlp(w.experts[e], g.experts[e]));
    }
    if (w.shared_expert.loaded()) {
      RETURN_IF_ERROR(up.Mlp(w.shared_expert, g.shared_expert));
      RETURN_IF_ERROR(up.Gate(w.shared_expert_gate, g.shared_expert_gate));
    }
  }
  RETURN_IF_ERROR(up.Vector(weights.final_norm, out->final_norm));
  RETURN_IF_ERROR(up.Linear(weights.lm_head, out->lm_head));
  if (bf16) {
    out->bf16_view = out->View();  // The f32 parts; the linear layers' pointers still null.
    out->bf16 = true;
    out->fp8 = fp8;
    const forward::ModelView host = forward::HostView(weights);
    if (fp8) {
      RETURN_IF_ERROR(forward::AttachBf16<true>(host, DeviceStore{out.get(), &up}, out->bf16_view));
    } else {
      RETURN_IF_ERROR(forward::AttachBf16(host, DeviceStore{out.get(), &up}, out->bf16_view));
    }
  }
  out->bytes = up.bytes() + static_cast<int64_t>(weights.embed.size()) * 4;
  return out;
}

}  // namespace semmoe::engine::gpu

namespace semmoe::engine::gpu {

absl::Status GpuWeights::SetExperts(int layer, const std::vector<int32_t>& held,
                                    const std::map<int32_t, const model::MlpWeights*>& gained) {
  if (layer < 0 || layer >= static_cast<int>(layers.size()) || !layers[layer].is_moe) {
    return absl::InvalidArgumentError(absl::StrCat("layer ", layer, " is not a MoE layer"));
  }
  if (fp8) {
    return absl::FailedPreconditionError(
        "a live expert move is not supported with FP8 weights (engine --precision fp8): restart "
        "the ranks with the new placement, or serve --precision bf16");
  }
  GpuLayer& g = layers[layer];
  const int experts = static_cast<int>(g.experts.size());
  auto here = [&](int32_t e) {
    return bf16 ? !bf16_view.layers[layer].experts[e].gate.empty() : g.experts[e].gate.rows > 0;
  };
  for (int32_t e : held) {
    if (e < 0 || e >= experts || (gained.count(e) == 0 && !here(e))) {
      return absl::FailedPreconditionError(absl::StrCat(
          "layer ", layer, " expert ", e, " is neither on the device nor among the gained"));
    }
  }
  std::vector<bool> keep(experts, false);
  for (int32_t e : held) keep[e] = true;
  auto mlp_bytes = [](const GpuMlp& m) {
    return 4 * (m.gate.w.size() + m.up.w.size() + m.down.w.size());
  };
  if (!bf16) {  // f32: one array per projection; upload the gained, then free the lost.
    Uploader up(false);
    std::map<int32_t, GpuMlp> fresh;
    for (const auto& [e, w] : gained) {
      if (keep[e]) RETURN_IF_ERROR(up.Mlp(*w, fresh[e]));
    }
    for (auto& [e, m] : fresh) {
      bytes += mlp_bytes(m) - mlp_bytes(g.experts[e]);
      g.experts[e] = std::move(m);
    }
    for (int e = 0; e < experts; ++e) {
      if (keep[e]) continue;
      bytes -= mlp_bytes(g.experts[e]);
      g.experts[e] = GpuMlp();
    }
    return absl::OkStatus();
  }
  // bf16: a new stack per projection, rows in `held` order; then the old stacks go.
  forward::LayerView& view = bf16_view.layers[layer];
  const int64_t n = static_cast<int64_t>(held.size());
  struct Part {
    forward::LinearView forward::MlpView::*linear;
    const model::LinearWeight model::MlpWeights::*host;
    const uint16_t* forward::StackedExpertsView::*stacked;
  };
  const Part parts[] = {
      {&forward::MlpView::gate, &model::MlpWeights::gate, &forward::StackedExpertsView::gate},
      {&forward::MlpView::up, &model::MlpWeights::up, &forward::StackedExpertsView::up},
      {&forward::MlpView::down, &model::MlpWeights::down, &forward::StackedExpertsView::down}};
  // The projections' shapes, from any expert held now or gained.
  const forward::MlpView* shape = nullptr;
  for (int e = 0; e < experts && shape == nullptr; ++e) {
    if (here(e)) shape = &view.experts[e];
  }
  std::vector<DeviceArray<uint16_t>> stacks(3);
  std::vector<int64_t> rows(3), cols(3);
  for (int p = 0; p < 3; ++p) {
    if (shape != nullptr) {
      rows[p] = (shape->*parts[p].linear).rows;
      cols[p] = (shape->*parts[p].linear).cols;
    } else if (!gained.empty()) {
      const model::LinearWeight& w = (*gained.begin()->second).*parts[p].host;
      rows[p] = w.rows();
      cols[p] = w.cols();
    }
    const int64_t per = rows[p] * cols[p];
    RETURN_IF_ERROR(stacks[p].Reserve(n * per));
    for (int64_t i = 0; i < n; ++i) {
      uint16_t* to = stacks[p].data() + i * per;
      auto it = gained.find(held[i]);
      if (it != gained.end()) {
        const model::LinearWeight& w = (*it->second).*parts[p].host;
        if (w.rows() * w.cols() != per) {
          return absl::InvalidArgumentError("experts of one layer differ in shape");
        }
        const std::vector<uint16_t> bits = forward::ToBf16Bits(w.w.data(), per);
        CUDA_RETURN_IF_ERROR(cudaMemcpy(to, bits.data(), 2 * per, cudaMemcpyHostToDevice));
      } else {
        const uint16_t* from = (view.experts[held[i]].*parts[p].linear).w16;
        CUDA_RETURN_IF_ERROR(cudaMemcpy(to, from, 2 * per, cudaMemcpyDeviceToDevice));
      }
    }
  }
  // Install: the new stacks replace the old ones (found among the arrays by address).
  for (int p = 0; p < 3; ++p) {
    const uint16_t* old = view.stacked.*parts[p].stacked;
    for (auto it = bf16_arrays.begin(); it != bf16_arrays.end(); ++it) {
      if (old != nullptr && it->data() == old) {
        bytes -= 2 * it->size();
        bf16_arrays.erase(it);
        break;
      }
    }
    bytes += 2 * stacks[p].size();
    view.stacked.*parts[p].stacked = stacks[p].data();
    bf16_arrays.push_back(std::move(stacks[p]));
  }
  view.stacked.experts = n == experts ? std::vector<int32_t>() : held;
  if (n == 0)
    view.stacked = forward::StackedExpertsView();  // None here (an empty list would mean all).
  for (int e = 0; e < experts; ++e) view.experts[e] = forward::MlpView();
  for (int64_t i = 0; i < n; ++i) {
    forward::MlpView& m = view.experts[held[i]];
    for (int p = 0; p < 3; ++p) {
      m.*parts[p].linear = {.w16 = view.stacked.*parts[p].stacked + i * rows[p] * cols[p],
                            .rows = rows[p],
                            .cols = cols[p]};
    }
  }
  return absl::OkStatus();
}

}  // namespace semmoe::engine::gpu
