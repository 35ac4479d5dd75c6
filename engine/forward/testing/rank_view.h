// An expert-parallel rank's view of a model's weights: the experts the rank does not hold under
// the placement are absent (null), so touching one would fail ForwardRunner::Init's check or
// crash the emulation. And a placement with replicas, for the tests' layouts.
#ifndef SEMMOE_ENGINE_FORWARD_TESTING_RANK_VIEW_H_
#define SEMMOE_ENGINE_FORWARD_TESTING_RANK_VIEW_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/forward/model_view.h"
#include "engine/text/config.h"
#include "planner/placement/placement.h"

namespace semmoe::engine::forward::testing {

inline ModelView RankView(const ModelView& full, const model::ModelConfig& c,
                          const planner::Placement& p, int rank) {
  ModelView view = full;
  const std::vector<int> moe = c.MoeLayers();
  for (size_t i = 0; i < moe.size(); ++i) {
    for (int e = 0; e < c.num_experts; ++e) {
      if (!p.Holds(static_cast<int>(i), rank, e)) view.layers[moe[i]].experts[e] = MlpView();
    }
  }
  return view;
}

// `p` with one replica per device per MoE layer: on each device, the lowest-numbered expert homed
// elsewhere.
inline planner::Placement WithOneReplicaPerDevice(const planner::Placement& p) {
  std::vector<std::vector<std::vector<int32_t>>> replicas(p.num_layers());
  for (int l = 0; l < p.num_layers(); ++l) {
    for (int d = 0; d < p.num_devices(); ++d) {
      int e = 0;
      while (p.Device(l, e) == d) ++e;
      replicas[l].push_back({e});
    }
  }
  return *p.WithReplicas(std::move(replicas));
}

}  // namespace semmoe::engine::forward::testing

#endif  // SEMMOE_ENGINE_FORWARD_TESTING_RANK_VIEW_H_
