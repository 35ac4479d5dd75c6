// What the GPU forward (ForwardRunner over CudaOps) implements, checked before anything is
// uploaded: a model outside it is refused with the reason, never half-loaded.
//
// It runs every architecture the CPU forward does — standard attention with GQA (qwen3_moe,
// qwen2_moe, mixtral) and DeepSeek's multi-head latent attention, softmax greedy, group-limited
// and bias-corrected (noaux_tc) routing — within the kernels' sizes: attention heads up to 1024
// floats (under MLA kv_lora_rank + qk_rope_head_dim), up to 1024 experts in up to 32 groups,
// top_k up to 32.
#ifndef SEMMOE_ENGINE_GPU_GPU_SUPPORT_H_
#define SEMMOE_ENGINE_GPU_GPU_SUPPORT_H_

#include "absl/status/status.h"
#include "engine/text/config.h"

namespace semmoe::engine::gpu {

// InvalidArgument naming what the GPU forward lacks, or OK.
absl::Status CheckGpuSupport(const model::ModelConfig& config);

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_GPU_SUPPORT_H_
