// DevicePredictor: before a MoE layer runs, scores for each token every device by how much of its
// experts it should hold there, so Attention-TP's shuffled reduce-scatter can put the token on
// its best device with room (docs/PARALLEL.md, "Attention-TP"). Two tables per MoE layer, the more
// confident wins:
//   T  token id → the expected share of its experts on each device, from the token affinities C
//      and the placement (unseen ids use their embedding neighbour's when C has one, else the
//      layer's marginal), refined by the token before it when C saw that pair; its confidence is
//      the top share;
//   A  devices the token used at the two previous MoE layers → (device, confidence); when more
//      confident than T, the token's scores are that confidence on that device, 0 elsewhere.
// Immutable after construction; thread-safe.
#ifndef SEMMOE_ENGINE_PARALLEL_DEVICE_PREDICTOR_H_
#define SEMMOE_ENGINE_PARALLEL_DEVICE_PREDICTOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/transition_table.h"
#include "planner/placement/placement.h"

namespace semmoe::engine {

// A DevicePredictor as lookup tables, for a device (kernels/op_args.h: PredictDevicesArgs gives
// Score's scores from them): per MoE layer a row per seen token (an unseen id with a stand-in
// maps to its stand-in's row) and one for every other id, the interpolated row of every learned
// (previous, token) context, and the A table.
struct PredictorTables {
  int devices = 0;
  std::vector<int32_t> row_of_token;   // [vocab]: the id's row (−1: the unseen row).
  int64_t unseen_row = 0;              // The last row.
  std::vector<uint64_t> context_keys;  // Ascending: previous << 32 | id.
  struct Layer {
    std::vector<float> shares;          // [unseen_row + 1, devices].
    std::vector<float> context_shares;  // [context_keys, devices].
    std::vector<int32_t> a_device;      // [(devices + 1) · devices]; empty: no A table.
    std::vector<float> a_confidence;
  };
  std::vector<Layer> layers;  // Per MoE layer.
  int64_t bytes() const;
};

class DevicePredictor {
 public:
  // REQUIRES: `affinity` was learned for the placement's model (same MoE layers and experts);
  // `transitions` (the A table; empty: none) for the placement's layers and devices. `affinity`
  // and `placement` are borrowed and must outlive the predictor.
  DevicePredictor(const planner::TokenAffinity& affinity, const planner::Placement& placement,
                  planner::TransitionTable transitions = {});

  int num_devices() const { return num_devices_; }
  bool uses_history() const { return !transitions_.layers.empty(); }

  // scores: [tokens, num_devices()], filled. `previous`: each token's predecessor id (−1
  // unknown; may be empty). `prev1`/`prev2`: each token's devices at the previous two MoE layers
  // (−1 unknown; may be empty when !uses_history()).
  void Score(int moe_layer, absl::Span<const int32_t> tokens, absl::Span<const int32_t> previous,
             absl::Span<const int32_t> prev2, absl::Span<const int32_t> prev1,
             absl::Span<float> scores) const;

  // The same predictions as tables (for a device): built with Score itself, so they agree.
  PredictorTables Tables() const;

 private:
  const planner::TokenAffinity& affinity_;
  const planner::Placement& placement_;
  int num_devices_;
  // [moe layer]: token id → its shares per device; the marginal's shares for unseen ids.
  std::vector<absl::flat_hash_map<int32_t, std::vector<float>>> by_token_;
  std::vector<std::vector<float>> unseen_;
  absl::flat_hash_map<int32_t, int32_t> stand_in_;  // Unseen id → its nearest seen id.
  planner::TransitionTable transitions_;
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_DEVICE_PREDICTOR_H_
