// DevicePrediction<Ops>: Attention-TP's device prediction (engine/parallel/device_predictor.h) run
// where the batch is. The predictor's tables (DevicePredictor::Tables: a row per seen token, the
// learned (previous, token) contexts, the A tables) are uploaded once into Ops memory; a layer's
// scores for a batch are one Ops::PredictDevices call over the token ids, their predecessors and
// the devices each token's experts were homed on at the previous two MoE layers — all already in
// Ops memory (engine/forward/tp_exchange.h keeps that history there). The same scores as
// DevicePredictor::Score (tests/device_prediction_test).
//
// Thread-compatible.
#ifndef SEMMOE_ENGINE_FORWARD_DEVICE_PREDICTION_H_
#define SEMMOE_ENGINE_FORWARD_DEVICE_PREDICTION_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "engine/parallel/device_predictor.h"
#include "kernels/op_args.h"

namespace semmoe::engine::forward {

template <typename Ops>
class DevicePrediction {
 public:
  template <typename T>
  using Array = typename Ops::template Array<T>;

  // Uploads `predictor`'s tables. Borrows `ops` (outlives this); Ops memory must be usable
  // (after Ops::Begin()).
  static absl::StatusOr<std::unique_ptr<DevicePrediction>> Create(const DevicePredictor& predictor,
                                                                  Ops& ops) {
    const PredictorTables t = predictor.Tables();
    auto p = std::unique_ptr<DevicePrediction>(new DevicePrediction(ops));
    p->devices_ = t.devices;
    p->vocab_ = static_cast<int64_t>(t.row_of_token.size());
    p->unseen_row_ = t.unseen_row;
    p->contexts_ = static_cast<int64_t>(t.context_keys.size());
    p->bytes_ = t.bytes();
    RETURN_IF_ERROR(Upload(ops, p->row_of_token_, t.row_of_token));
    RETURN_IF_ERROR(Upload(ops, p->context_keys_, t.context_keys));
    p->layers_.resize(t.layers.size());
    for (size_t l = 0; l < t.layers.size(); ++l) {
      Layer& out = p->layers_[l];
      RETURN_IF_ERROR(Upload(ops, out.shares, t.layers[l].shares));
      RETURN_IF_ERROR(Upload(ops, out.context_shares, t.layers[l].context_shares));
      out.history = !t.layers[l].a_device.empty();
      RETURN_IF_ERROR(Upload(ops, out.a_device, t.layers[l].a_device));
      RETURN_IF_ERROR(Upload(ops, out.a_confidence, t.layers[l].a_confidence));
    }
    RETURN_IF_ERROR(ops.Finish());  // The host tables go out of scope.
    return p;
  }

  int devices() const { return devices_; }
  // The tables' size in Ops memory.
  int64_t bytes() const { return bytes_; }
  // Whether MoE layer `moe` has an A table (its scores then use the history).
  bool uses_history(int moe) const {
    return moe >= 0 && moe < static_cast<int>(layers_.size()) && layers_[moe].history;
  }

  // scores [tokens, devices] at MoE layer `moe`: `ids`, `previous` (−1 unknown) [tokens]; `prev2`,
  // `prev1` [tokens] the homes at the previous two MoE layers as f32 (−1 unknown; both unused
  // unless uses_history(moe), prev2 unused at moe 1). All Ops memory.
  absl::Status Score(int moe, const int32_t* ids, const int32_t* previous, int64_t tokens,
                     const float* prev2, const float* prev1, float* scores) {
    if (moe < 0 || moe >= static_cast<int>(layers_.size())) {
      return absl::InvalidArgumentError(absl::StrCat("no prediction tables for MoE layer ", moe));
    }
    const Layer& l = layers_[moe];
    return ops_.PredictDevices({.ids = ids,
                                .previous = previous,
                                .tokens = tokens,
                                .devices = devices_,
                                .row_of_token = row_of_token_.data(),
                                .vocab = vocab_,
                                .shares = l.shares.data(),
                                .unseen_row = unseen_row_,
                                .context_keys = context_keys_.data(),
                                .contexts = contexts_,
                                .context_shares = l.context_shares.data(),
                                .prev2 = l.history && moe >= 2 ? prev2 : nullptr,
                                .prev1 = l.history ? prev1 : nullptr,
                                .a_device = l.history ? l.a_device.data() : nullptr,
                                .a_confidence = l.history ? l.a_confidence.data() : nullptr,
                                .scores = scores});
  }

 private:
  struct Layer {
    Array<float> shares, context_shares, a_confidence;
    Array<int32_t> a_device;
    bool history = false;
  };

  explicit DevicePrediction(Ops& ops) : ops_(ops) {}

  template <typename T>
  static absl::Status Upload(Ops& ops, Array<T>& to, const std::vector<T>& from) {
    RETURN_IF_ERROR(to.Reserve(static_cast<int64_t>(from.size())));
    if (from.empty()) return absl::OkStatus();
    return ops.CopyIn(to.data(), from.data(), static_cast<int64_t>(from.size()));
  }

  Ops& ops_;
  int devices_ = 0;
  int64_t vocab_ = 0, unseen_row_ = 0, contexts_ = 0, bytes_ = 0;
  Array<int32_t> row_of_token_;
  Array<uint64_t> context_keys_;
  std::vector<Layer> layers_;
};

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_DEVICE_PREDICTION_H_
