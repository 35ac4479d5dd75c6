// The bf16 forward's weights (engine --precision bf16, the GPU default): every linear layer of a
// ModelView as bf16 bits — rounded to nearest even from the f32 source, so a BF16 checkpoint's
// values come back exactly — with each MoE layer's experts this device holds also stacked for one
// grouped call. Half the bytes of f32 for the weights that decode streams.
//
// Kept f32: the embedding table (a row gather, not a product), norms, biases, the MoE router and
// qwen2_moe's shared-expert gate. The router stays f32 because its logits decide the top-k: in
// bf16, near-ties flip, and with them the routing the planner's placement was made for.
#ifndef SEMMOE_ENGINE_FORWARD_BF16_VIEW_H_
#define SEMMOE_ENGINE_FORWARD_BF16_VIEW_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "engine/forward/model_view.h"
#include "engine/model/weights.h"

namespace semmoe::engine::forward {

// The bf16 bits of an f32 [rows, cols] matrix (nearest even).
std::vector<uint16_t> ToBf16Bits(const float* w, int64_t n);

// For every linear layer but the router and the shared-expert gate: target's w16 = a bf16 copy of
// source's f32 matrix, made by `store`, and target's w = null. `source` is host memory (f32);
// `target` has the same shapes and keeps its other pointers (device memory for the GPU). Experts
// absent from `source` (another rank's) stay absent; the present ones are stacked (target's
// `stacked`, naming them unless all are present) and each expert's views point into the stack.
//   store: absl::StatusOr<const T*>(std::vector<T> values) — keeps a copy (host or device) for
//   as long as `target` is used, and returns its address (T: uint16_t; with kKeepFp8 also
//   uint8_t and float, engine/forward/fp8_view.h).
// kKeepFp8: a linear layer whose source carries FP8 codes (LinearView::fp8) keeps them and its
// block scales instead of a bf16 copy; a MoE layer's experts are all FP8 or none.
template <bool kKeepFp8 = false, typename Store>
absl::Status AttachBf16(const ModelView& source, Store&& store, ModelView& target) {
  // Scales per matrix of a view's shape.
  auto scale_count = [](const LinearView& v) {
    return ((v.rows + v.fp8.block_rows - 1) / v.fp8.block_rows) *
           ((v.cols + v.fp8.block_cols - 1) / v.fp8.block_cols);
  };
  auto linear = [&](const LinearView& from, LinearView& to) -> absl::Status {
    if (from.empty()) return absl::OkStatus();
    to.exact16 = nullptr;
    if constexpr (kKeepFp8) {
      if (from.fp8.codes != nullptr) {
        const int64_t n = from.rows * from.cols, ns = scale_count(from);
        to.fp8 = from.fp8;
        ASSIGN_OR_RETURN(to.fp8.codes,
                         store(std::vector<uint8_t>(from.fp8.codes, from.fp8.codes + n)));
        ASSIGN_OR_RETURN(to.fp8.scales,
                         store(std::vector<float>(from.fp8.scales, from.fp8.scales + ns)));
        to.w = nullptr;
        return absl::OkStatus();
      }
    }
    if (from.w == nullptr) {
      return absl::InvalidArgumentError(
          "a weight held only in FP8 (loaded for the FP8 forward) has no bf16 copy to make");
    }
    to.fp8 = Fp8View();
    ASSIGN_OR_RETURN(to.w16, store(ToBf16Bits(from.w, from.rows * from.cols)));
    to.w = nullptr;
    return absl::OkStatus();
  };
  auto mlp = [&](const MlpView& from, MlpView& to) -> absl::Status {
    RETURN_IF_ERROR(linear(from.gate, to.gate));
    RETURN_IF_ERROR(linear(from.up, to.up));
    return linear(from.down, to.down);
  };
  for (size_t l = 0; l < source.layers.size(); ++l) {
    const LayerView& from = source.layers[l];
    LayerView& to = target.layers[l];
    for (auto [f, t] :
         {std::pair{&from.q, &to.q}, std::pair{&from.k, &to.k}, std::pair{&from.v, &to.v},
          std::pair{&from.o, &to.o}, std::pair{&from.mla.q_a, &to.mla.q_a},
          std::pair{&from.mla.q_b, &to.mla.q_b}, std::pair{&from.mla.kv_a, &to.mla.kv_a},
          std::pair{&from.mla.kv_b, &to.mla.kv_b}}) {
      RETURN_IF_ERROR(linear(*f, *t));
    }
    RETURN_IF_ERROR(mlp(from.dense, to.dense));
    if (from.has_shared_expert) RETURN_IF_ERROR(mlp(from.shared_expert, to.shared_expert));
    std::vector<int32_t> present;
    for (size_t e = 0; e < from.experts.size(); ++e) {
      if (!from.experts[e].gate.empty()) present.push_back(static_cast<int32_t>(e));
    }
    to.stacked = StackedExpertsView();
    if (present.empty()) continue;
    if (present.size() < from.experts.size()) to.stacked.experts = present;
    // Stacked: gate, up [n, inter, hidden]; down [n, hidden, inter].
    const int64_t per = from.experts[present[0]].gate.rows * from.experts[present[0]].gate.cols;
    bool fp8 = false;
    if constexpr (kKeepFp8) fp8 = from.experts[present[0]].gate.fp8.codes != nullptr;
    for (auto [part, out, out8] :
         {std::tuple{&MlpView::gate, &to.stacked.gate, &to.stacked.gate8},
          std::tuple{&MlpView::up, &to.stacked.up, &to.stacked.up8},
          std::tuple{&MlpView::down, &to.stacked.down, &to.stacked.down8}}) {
      const LinearView& first = from.experts[present[0]].*part;
      std::vector<uint16_t> bits;
      std::vector<uint8_t> codes;
      std::vector<float> scales;
      for (int32_t e : present) {
        const LinearView& v = from.experts[e].*part;
        if (v.rows != first.rows || v.cols != first.cols) {
          return absl::InvalidArgumentError("experts of one layer differ in shape");
        }
        if ((kKeepFp8 && v.fp8.codes != nullptr) != fp8 || (fp8 && (v.fp8.block_rows != first.fp8.block_rows ||
                                                        v.fp8.block_cols != first.fp8.block_cols))) {
          return absl::InvalidArgumentError(
              "experts of one layer differ in FP8 storage (all or none, one block size)");
        }
        if (fp8) {
          codes.insert(codes.end(), v.fp8.codes, v.fp8.codes + per);
          scales.insert(scales.end(), v.fp8.scales, v.fp8.scales + scale_count(v));
        } else {
          if (v.w == nullptr) {
            return absl::InvalidArgumentError(
                "an expert held only in FP8 (loaded for the FP8 forward) has no bf16 copy to make");
          }
          std::vector<uint16_t> one = ToBf16Bits(v.w, per);
          bits.insert(bits.end(), one.begin(), one.end());
        }
      }
      if (fp8) {
        if constexpr (kKeepFp8) {
          *out8 = first.fp8;
          ASSIGN_OR_RETURN(out8->codes, store(std::move(codes)));
          ASSIGN_OR_RETURN(out8->scales, store(std::move(scales)));
        }
      } else {
        ASSIGN_OR_RETURN(*out, store(std::move(bits)));
      }
      for (size_t i = 0; i < present.size(); ++i) {
        LinearView& v = to.experts[present[i]].*part;
        v.w = nullptr;
        v.exact16 = nullptr;
        if (fp8) {
          v.fp8 = *out8;
          v.fp8.codes = out8->codes + static_cast<int64_t>(i) * per;
          v.fp8.scales = out8->scales + static_cast<int64_t>(i) * scale_count(first);
        } else {
          v.fp8 = Fp8View();
          v.w16 = *out + static_cast<int64_t>(i) * per;
        }
      }
    }
  }
  return linear(source.lm_head, target.lm_head);
}

// Host memory for the bf16 view: the CPU emulation of the bf16 GPU forward (ForwardRunner with
// CpuOps) in CI. `weights` must outlive it (its f32 norms, router, embedding stay in place).
class HostBf16Weights {
 public:
  static absl::StatusOr<std::unique_ptr<HostBf16Weights>> Make(const model::ModelWeights& weights);
  // Of a view of host f32 weights (e.g. an expert-parallel rank's), which must outlive it.
  static absl::StatusOr<std::unique_ptr<HostBf16Weights>> Make(const ModelView& source);
  const ModelView& view() const { return view_; }
  int64_t bf16_bytes() const { return bytes_; }

 private:
  HostBf16Weights() = default;
  std::deque<std::vector<uint16_t>> buffers_;
  ModelView view_;
  int64_t bytes_ = 0;
};

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_BF16_VIEW_H_
