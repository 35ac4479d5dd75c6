// LayerAffinity: learning the `A` tables (docs/PARALLEL.md, "Attention-TP") from a trace (the
// planner's side; engines read the result, transition_table.h). For a placement, a token's "device"
// at a layer is the device holding most of the experts it chose there. Routing is sticky across
// layers, so the devices at layers l−2 and l−1 (known at run time before layer l's shuffle) predict
// the device at layer l: A[l][(d₋₂, d₋₁)] → (device, confidence), learned from a trace.
#ifndef SEMMOE_PLANNER_AFFINITY_LAYER_AFFINITY_H_
#define SEMMOE_PLANNER_AFFINITY_LAYER_AFFINITY_H_

#include <cstdint>
#include <vector>

#include "planner/affinity/transition_table.h"
#include "planner/placement/placement.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

// The device holding most of token t's experts at `layer` (lowest id on ties).
int BestDevice(const trace::TraceSet& trace, const Placement& placement, int64_t t, int layer);

class LayerAffinity {
 public:
  static LayerAffinity Build(const trace::TraceSet& trace, const Placement& placement);

  struct Prediction {
    int device = 0;
    // Expected share of the token's experts on `device`, over the profile's tokens with this
    // history: the same scale as the token-id (T) prediction's confidence.
    double confidence = 0;
  };
  // REQUIRES: layer ≥ 1. For layer 1 only d₋₁ is used (pass prev2 = -1).
  Prediction Predict(int layer, int prev2, int prev1) const;

  // Every prediction, as stored with a placement version.
  TransitionTable Table() const;

 private:
  int g_ = 0;
  // [layer][(prev2 + 1) * g + prev1][device]: experts chosen on that device by tokens with this
  // history; prev2 = -1 for layer 1. tokens_ counts the tokens per history.
  std::vector<std::vector<std::vector<int64_t>>> counts_;
  std::vector<std::vector<int64_t>> tokens_;
  int top_k_ = 1;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_AFFINITY_LAYER_AFFINITY_H_
