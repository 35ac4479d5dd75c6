// `engine score` and `engine trace` on the CPU product's forward: a CpuForward
// (engine/forward/cpu_forward.h) sized for a PrefillRunner's passes, and the host page
// allocator (no arena) that lends its sequences pages. The CPU twin of engine/gpu/gpu_prefill.h.
#ifndef SEMMOE_ENGINE_OFFLINE_CPU_PREFILL_H_
#define SEMMOE_ENGINE_OFFLINE_CPU_PREFILL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/forward/cpu_forward.h"
#include "engine/model/weights.h"
#include "engine/offline/prefill_runner.h"
#include "engine/runtime/kv_cache.h"
#include "engine/text/config.h"

namespace semmoe::engine::offline {

class CpuPrefill {
 public:
  // Pages for any pass of `max_batch_tokens` (PrefillPagesNeeded). `config` and `weights`
  // borrowed; they outlive this. Errors as CpuForward::Create.
  static absl::StatusOr<std::unique_ptr<CpuPrefill>> Create(const model::ModelConfig& config,
                                                            const model::ModelWeights& weights,
                                                            int max_batch_tokens);
  // For ScoreOptions/TraceOptions::backend; valid while this object lives.
  PrefillBackend backend();

 private:
  CpuPrefill() = default;
  std::unique_ptr<forward::CpuForward> forward_;
  std::unique_ptr<runtime::PagedKvCache> pages_;
};

}  // namespace semmoe::engine::offline

#endif  // SEMMOE_ENGINE_OFFLINE_CPU_PREFILL_H_
