// GpuLikeCpuOps: the CPU op set taking the GPU's orchestration choices, for the tests that
// emulate the GPU path in CI: ops that overlap the collectives (CudaOps::kOverlapsCollectives),
// so an expert-parallel rank serves its own rows apart, while the dispatch moves the peers'
// (engine/forward/ep_exchange.h). The CPU product runs plain CpuOps.
#ifndef SEMMOE_ENGINE_FORWARD_TESTING_GPU_LIKE_OPS_H_
#define SEMMOE_ENGINE_FORWARD_TESTING_GPU_LIKE_OPS_H_

#include "engine/forward/cpu_ops.h"

namespace semmoe::engine::forward::testing {

class GpuLikeCpuOps : public CpuOps {
 public:
  static constexpr bool kOverlapsCollectives = true;
};

}  // namespace semmoe::engine::forward::testing

#endif  // SEMMOE_ENGINE_FORWARD_TESTING_GPU_LIKE_OPS_H_
