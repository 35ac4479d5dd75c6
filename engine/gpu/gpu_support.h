// What the GPU forward (ForwardRunner over CudaOps) implements, checked before anything is
// uploaded: a model outside it is refused with the reason, never half-loaded.
//
// It runs standard multi-head attention with GQA (qwen3_moe, qwen2_moe, mixtral) and softmax
// greedy top-k routing. DeepSeek's MLA and its group-limited / bias-corrected routing run on the
// CPU forward only (docs/ENGINE.md).
#ifndef SEMMOE_ENGINE_GPU_GPU_SUPPORT_H_
#define SEMMOE_ENGINE_GPU_GPU_SUPPORT_H_

#include "absl/status/status.h"
#include "engine/model/config.h"

namespace semmoe::engine::gpu {

// InvalidArgument naming what the GPU forward lacks, or OK.
absl::Status CheckGpuSupport(const model::ModelConfig& config);

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_GPU_SUPPORT_H_
