// An expert-parallel rank's view of a model's weights: the experts the rank does not hold under
// the placement are absent (null), so touching one would fail ForwardRunner::Init's check or
// crash the emulation.
#ifndef SEMMOE_ENGINE_GPU_TESTING_RANK_VIEW_H_
#define SEMMOE_ENGINE_GPU_TESTING_RANK_VIEW_H_

#include <vector>

#include "engine/gpu/model_view.h"
#include "engine/model/config.h"
#include "planner/placement/placement.h"

namespace semmoe::engine::gpu::testing {

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

}  // namespace semmoe::engine::gpu::testing

#endif  // SEMMOE_ENGINE_GPU_TESTING_RANK_VIEW_H_
