// DevicePredictor: before a MoE layer runs, guesses for each token the device that will hold most
// of its experts there, so Attention-TP's shuffled reduce-scatter can put the token on that
// device (DESIGN.md §4). Two tables, per MoE layer, the more confident wins:
//   T  token id → (device, confidence), from the token affinities C and the placement:
//      confidence = P(expert on that device | token), unseen ids use the layer's marginal;
//   A  devices the token used at the two previous MoE layers → (device, confidence).
// Immutable after construction; thread-safe.
#ifndef SEMMOE_ENGINE_PARALLEL_DEVICE_PREDICTOR_H_
#define SEMMOE_ENGINE_PARALLEL_DEVICE_PREDICTOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "planner/affinity/layer_affinity.h"
#include "planner/affinity/token_affinity.h"
#include "planner/placement/placement.h"

namespace semmoe::engine {

struct DevicePrediction {
  int32_t device = -1;  // −1: no prediction.
  float confidence = 0;
};

class DevicePredictor {
 public:
  // REQUIRES: `affinity` was learned for the placement's model (same MoE layers and experts);
  // `transitions` (the A table; empty: none) for the placement's layers and devices.
  DevicePredictor(const planner::TokenAffinity& affinity, const planner::Placement& placement,
                  planner::TransitionTable transitions = {});

  // With the A table read off a LayerAffinity learned for `placement` (null: T only).
  static std::unique_ptr<DevicePredictor> Create(const planner::TokenAffinity& affinity,
                                                 const planner::Placement& placement,
                                                 const planner::LayerAffinity* transitions);

  int num_devices() const { return num_devices_; }
  bool uses_history() const { return !transitions_.layers.empty(); }

  // For each token: `prev1`/`prev2` are its devices at the previous two MoE layers (−1 unknown;
  // may be empty when !uses_history()).
  void Predict(int moe_layer, absl::Span<const int32_t> tokens, absl::Span<const int32_t> prev2,
               absl::Span<const int32_t> prev1, absl::Span<int32_t> device,
               absl::Span<float> confidence) const;

 private:
  int num_devices_;
  std::vector<absl::flat_hash_map<int32_t, DevicePrediction>> by_token_;  // [moe layer]
  std::vector<DevicePrediction> unseen_;                                 // [moe layer]
  planner::TransitionTable transitions_;
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_DEVICE_PREDICTOR_H_
