// The FP8 forward's weights (engine --precision fp8; a block-scaled FP8 checkpoint, e.g.
// DeepSeek-V3's): every linear layer the checkpoint stored in F8_E4M3 stays FP8 where the
// parameters live — codes and block scales, about half of bf16's bytes — and a layer's are
// dequantised to bf16 just before the layer runs (Fp8Layers, called by the ForwardRunner), into
// one scratch the size of the largest layer that every layer reuses. The layer's products are
// then the bf16 forward's (bf16_view.h); linear layers the checkpoint kept in BF16 or F32 (the LM
// head, `modules_to_not_convert`) are bf16 as there.
//
// The logits equal the bf16 forward's on the dequantised model bit for bit: both round the same
// f32 product decode(code) × scale to bf16 (kernels/op_args.h Fp8DequantArgs). What this costs:
// each pass reads a layer's FP8 bytes and writes and reads its bf16 copy — more weight traffic
// per decode step than bf16, for half the resident weight memory (docs/ENGINE.md, "FP8").
#ifndef SEMMOE_ENGINE_FORWARD_FP8_VIEW_H_
#define SEMMOE_ENGINE_FORWARD_FP8_VIEW_H_

#include <cstdint>
#include <deque>
#include <algorithm>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "engine/forward/bf16_view.h"
#include "engine/forward/model_view.h"
#include "engine/model/weights.h"
#include "kernels/op_args.h"

namespace semmoe::engine::forward {

// Whether any linear layer of `view` is held as FP8.
bool HasFp8(const ModelView& view);

// The dequantisation of each layer's FP8 parts into a bf16 scratch, and the layer as the products
// see it (w16 into the scratch). Prepare once per view (it sizes the scratch: reserve before any
// graph capture); Layer enqueues the layer's dequantisation on `ops` and returns its view, valid
// until the next Layer call. A layer with no FP8 part comes back as it is, at no cost.
template <typename Ops>
class Fp8Layers {
 public:
  absl::Status Prepare(Ops& ops, const ModelView& view) {
    layers_.clear();
    jobs_.clear();
    layer_offsets_.clear();
    int64_t most = 0;
    for (const LayerView& from : view.layers) {
      LayerView& to = layers_.emplace_back(from);
      std::vector<kernels::Fp8DequantArgs>& jobs = jobs_.emplace_back();
      Offsets& offsets = layer_offsets_.emplace_back();
      int64_t used = 0;  // Offsets into the scratch, made pointers once it is sized.
      auto plan = [&](const Fp8View& f, int64_t count, int64_t rows, int64_t cols) {
        jobs.push_back({.codes = f.codes,
                        .scales = f.scales,
                        .count = count,
                        .rows = rows,
                        .cols = cols,
                        .block_rows = f.block_rows,
                        .block_cols = f.block_cols});
        offsets.jobs.push_back(used);
        used += count * rows * cols;
        return used - count * rows * cols;
      };
      auto& at = offsets.linears;
      for (LinearView* v : model::NonExpertLinears(to)) {
        if (v->fp8.codes != nullptr) at.emplace_back(v, plan(v->fp8, 1, v->rows, v->cols));
      }
      auto& stacks = offsets.stacks;
      if (to.stacked.gate8.codes != nullptr) {
        std::vector<int32_t> held = to.stacked.experts;
        if (held.empty()) {
          for (size_t e = 0; e < to.experts.size(); ++e) held.push_back(static_cast<int32_t>(e));
        }
        const int64_t n = static_cast<int64_t>(held.size());
        for (auto [part, bits, codes] :
             {std::tuple{&MlpView::gate, &to.stacked.gate, &to.stacked.gate8},
              std::tuple{&MlpView::up, &to.stacked.up, &to.stacked.up8},
              std::tuple{&MlpView::down, &to.stacked.down, &to.stacked.down8}}) {
          const LinearView& first = to.experts[held[0]].*part;
          const int64_t per = first.rows * first.cols;
          const int64_t base = plan(*codes, n, first.rows, first.cols);
          stacks.emplace_back(bits, base);
          for (int64_t i = 0; i < n; ++i) at.emplace_back(&(to.experts[held[i]].*part), base + i * per);
          *codes = Fp8View();
        }
      }
      most = std::max(most, used);
    }
    RETURN_IF_ERROR(scratch_.Reserve(std::max<int64_t>(most, 1)));
    uint16_t* base = scratch_.data();
    for (size_t l = 0; l < layers_.size(); ++l) {
      for (size_t j = 0; j < jobs_[l].size(); ++j) {
        jobs_[l][j].out = base + layer_offsets_[l].jobs[j];
      }
      for (auto& [v, offset] : layer_offsets_[l].linears) {
        v->w16 = base + offset;
        v->w = nullptr;
        v->fp8 = Fp8View();
      }
      for (auto& [bits, offset] : layer_offsets_[l].stacks) *bits = base + offset;
    }
    layer_offsets_.clear();
    bytes_ = most * 2;
    // Every weight the products read is now f32 or bf16 (FP8 experts come stacked: AttachBf16).
    for (size_t l = 0; l < layers_.size(); ++l) {
      const LayerView& v = layers_[l];
      const auto linears = model::NonExpertLinears(v);
      std::vector<const LinearView*> all(linears.begin(), linears.end());
      for (const MlpView& e : v.experts) {
        for (const LinearView* x : {&e.gate, &e.up, &e.down}) all.push_back(x);
      }
      for (const LinearView* x : all) {
        if (x->fp8.codes != nullptr && x->w == nullptr && x->w16 == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              "layer ", l, ": an FP8 weight outside the FP8 view's expert stacks (AttachBf16)"));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<const LayerView*> Layer(Ops& ops, int layer) {
    for (const kernels::Fp8DequantArgs& j : jobs_[layer]) RETURN_IF_ERROR(ops.DequantizeFp8(j));
    return &layers_[layer];
  }

  // The scratch's bytes (one layer's FP8 parts as bf16).
  int64_t scratch_bytes() const { return bytes_; }

 private:
  struct Offsets {  // Into the scratch, in uint16_t.
    std::vector<int64_t> jobs;
    std::vector<std::pair<LinearView*, int64_t>> linears;
    std::vector<std::pair<const uint16_t**, int64_t>> stacks;
  };
  typename Ops::template Array<uint16_t> scratch_;
  std::deque<LayerView> layers_;  // Stable addresses: Offsets point into them.
  std::vector<std::vector<kernels::Fp8DequantArgs>> jobs_;
  std::vector<Offsets> layer_offsets_;
  int64_t bytes_ = 0;
};

// Host memory for the FP8 view: the CPU emulation of the FP8 GPU forward (ForwardRunner with
// CpuOps). `weights` must outlive it (its f32 norms, router, embedding stay in place).
class HostFp8Weights {
 public:
  static absl::StatusOr<std::unique_ptr<HostFp8Weights>> Make(const model::ModelWeights& weights);
  const ModelView& view() const { return view_; }
  // The linear layers' bytes: FP8 codes and scales, and bf16 for the rest.
  int64_t bytes() const { return bytes_; }

 private:
  HostFp8Weights() = default;
  template <typename T>
  const T* Keep(std::deque<std::vector<T>>& kept, std::vector<T> values) {
    bytes_ += static_cast<int64_t>(values.size() * sizeof(T));
    kept.push_back(std::move(values));
    return kept.back().data();
  }
  std::deque<std::vector<uint8_t>> codes_;
  std::deque<std::vector<uint16_t>> bits_;
  std::deque<std::vector<float>> scales_;
  ModelView view_;
  int64_t bytes_ = 0;
};

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_FP8_VIEW_H_
