// `engine score` and `engine trace` on the GPU: a GpuTransformer sized for a PrefillRunner's
// passes and the host page allocator (no host arena) that lends its sequences pages.
#ifndef SEMMOE_ENGINE_GPU_GPU_PREFILL_H_
#define SEMMOE_ENGINE_GPU_GPU_PREFILL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/gpu/gpu_transformer.h"
#include "engine/model/weights.h"
#include "engine/offline/prefill_runner.h"
#include "engine/runtime/kv_cache.h"
#include "engine/text/config.h"

namespace semmoe::engine::gpu {

class GpuPrefill {
 public:
  // Pages for any pass of `max_batch_tokens` (offline::PrefillPagesNeeded). Errors as
  // GpuTransformer::Create.
  static absl::StatusOr<std::unique_ptr<GpuPrefill>> Create(const model::ModelConfig& config,
                                                            const model::ModelWeights& weights,
                                                            const GpuTarget& target,
                                                            int max_batch_tokens);
  // For ScoreOptions/TraceOptions::backend; valid while this object lives.
  offline::PrefillBackend backend();
  const GpuTransformer& forward() const { return *forward_; }

 private:
  GpuPrefill() = default;
  std::unique_ptr<GpuTransformer> forward_;
  std::unique_ptr<runtime::PagedKvCache> pages_;
};

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_GPU_PREFILL_H_
