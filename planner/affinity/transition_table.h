// TransitionTable: the `A` tables as data — what a placement version stores and Attention-TP
// engines load to predict a token's device from the devices it used at the two previous MoE
// layers. Learned by LayerAffinity (layer_affinity.h) on the planner's side; this knows no traces.
#ifndef SEMMOE_PLANNER_AFFINITY_TRANSITION_TABLE_H_
#define SEMMOE_PLANNER_AFFINITY_TRANSITION_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmoe::planner {

// The A table as data — what a placement version stores and engines load: for every MoE layer
// l ≥ 1 and history h = (prev2 + 1) · G + prev1 (prev2 = −1 only at l = 1), the predicted device
// and its confidence. Layer 0 has no entries.
struct TransitionTable {
  struct Entry {
    int16_t device = -1;  // −1: no prediction.
    float confidence = 0;
  };
  int num_devices = 0;
  std::vector<std::vector<Entry>> layers;  // [layer][(G + 1) · G]

  // "SMLAYRA1" | u32 layers | u32 G | for layers 1..L−1: (G + 1) · G × (i16 device, f32 conf).
  std::string Serialize() const;
  // InvalidArgument naming the byte offset for anything malformed (never a crash).
  static absl::StatusOr<TransitionTable> Deserialize(absl::string_view bytes);
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_AFFINITY_TRANSITION_TABLE_H_
