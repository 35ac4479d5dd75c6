// The SwiGLU experts over rows already grouped by expert (a PermuteByExpert), on any Ops
// (engine/forward/forward_runner.h): for each expert e < `experts`, its rows [offsets[e],
// offsets[e+1]) of y go through one product per projection; rows past offsets[experts] (a
// bucket of slots served elsewhere) are left alone. Shared by the one-device and the
// expert-parallel passes.
#ifndef SEMMOE_ENGINE_FORWARD_GROUPED_EXPERTS_H_
#define SEMMOE_ENGINE_FORWARD_GROUPED_EXPERTS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/status_macros.h"
#include "engine/forward/model_view.h"

namespace semmoe::engine::forward {

// z[r] = down_e(silu(gate_e(y[r])) ⊙ up_e(y[r])) for the rows of experts [0, experts); g and u
// hold [offsets[experts], inter] intermediates. REQUIRES the views of experts with rows.
template <typename Ops>
absl::Status RunGroupedExperts(Ops& ops, const std::vector<int64_t>& offsets, int experts,
                               const std::vector<MlpView>& views, const float* y, float* g,
                               float* u, float* z, int64_t hidden, int64_t inter) {
  for (int e = 0; e < experts; ++e) {
    const int64_t begin = offsets[e], rows = offsets[e + 1] - offsets[e];
    if (rows == 0) continue;
    RETURN_IF_ERROR(ops.Linear(y + begin * hidden, rows, views[e].gate, g + begin * inter));
    RETURN_IF_ERROR(ops.Linear(y + begin * hidden, rows, views[e].up, u + begin * inter));
  }
  RETURN_IF_ERROR(ops.SiluMul(g, u, offsets[experts] * inter));
  for (int e = 0; e < experts; ++e) {
    const int64_t begin = offsets[e], rows = offsets[e + 1] - offsets[e];
    if (rows == 0) continue;
    RETURN_IF_ERROR(ops.Linear(g + begin * inter, rows, views[e].down, z + begin * hidden));
  }
  return absl::OkStatus();
}

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_GROUPED_EXPERTS_H_
