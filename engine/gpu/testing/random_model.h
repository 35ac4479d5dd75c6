// Seeded random models in memory (no checkpoint, no tokenizer) with each architecture's
// features, shaped for the GPU kernels (head_dim 32): qwen3_moe with QK-norm and a dense layer
// between MoE layers, qwen2_moe with attention biases, a gated shared expert and raw top-k
// weights, mixtral with plain attention. Weights N(0, 0.08²), norms N(1, 0.1²).
#ifndef SEMMOE_ENGINE_GPU_TESTING_RANDOM_MODEL_H_
#define SEMMOE_ENGINE_GPU_TESTING_RANDOM_MODEL_H_

#include <cstdint>

#include "engine/model/config.h"
#include "engine/model/weights.h"

namespace semmoe::engine::gpu::testing {

model::ModelConfig RandomModelConfig(model::Arch arch);
model::ModelWeights RandomWeights(const model::ModelConfig& config, uint64_t seed);

}  // namespace semmoe::engine::gpu::testing

#endif  // SEMMOE_ENGINE_GPU_TESTING_RANDOM_MODEL_H_
