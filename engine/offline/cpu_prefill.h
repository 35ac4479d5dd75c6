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
#include "engine/text/config.h"

namespace semmoe::engine::offline {

using CpuPrefill = PrefillOn<forward::CpuForward>;

// `config` and `weights` borrowed; they outlive the result. Errors as CpuForward::Create.
absl::StatusOr<std::unique_ptr<CpuPrefill>> CreateCpuPrefill(const model::ModelConfig& config,
                                                             const model::ModelWeights& weights,
                                                             int max_batch_tokens);

}  // namespace semmoe::engine::offline

#endif  // SEMMOE_ENGINE_OFFLINE_CPU_PREFILL_H_
