// `engine score` and `engine trace` on the GPU: a GpuTransformer sized for a PrefillRunner's
// passes and the host page allocator (no host arena) that lends its sequences pages.
#ifndef SEMMOE_ENGINE_GPU_GPU_PREFILL_H_
#define SEMMOE_ENGINE_GPU_GPU_PREFILL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/gpu/gpu_transformer.h"
#include "engine/model/weights.h"
#include "engine/offline/prefill_runner.h"
#include "engine/text/config.h"

namespace semmoe::engine::gpu {

using GpuPrefill = offline::PrefillOn<GpuTransformer>;

// Errors as GpuTransformer::Create.
absl::StatusOr<std::unique_ptr<GpuPrefill>> CreateGpuPrefill(const model::ModelConfig& config,
                                                             const model::ModelWeights& weights,
                                                             const GpuTarget& target,
                                                             int max_batch_tokens);

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_GPU_PREFILL_H_
