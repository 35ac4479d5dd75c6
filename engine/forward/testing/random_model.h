// Seeded random models in memory (no checkpoint, no tokenizer) with each architecture's
// features, shaped for the GPU kernels (head_dim 32): qwen3_moe with QK-norm and a dense layer
// between MoE layers, qwen2_moe with attention biases, a gated shared expert and raw top-k
// weights, mixtral with plain attention, deepseek_v2 (MLA without q LoRA, YaRN, group-max
// routing, ungated shared experts, a dense first layer) and deepseek_v3 (MLA with q LoRA,
// sigmoid bias-corrected routing by group top-two sums, scaled weights). Weights N(0, 0.08²), norms
// N(1, 0.1²), drawn by the same source as the tests' checkpoints
// (engine/model/testing/random_draws.h). RandomWeights fills any config; at a production shape (a
// benchmark's), use the fast fill.
#ifndef SEMMOE_ENGINE_FORWARD_TESTING_RANDOM_MODEL_H_
#define SEMMOE_ENGINE_FORWARD_TESTING_RANDOM_MODEL_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "engine/model/weights.h"
#include "engine/text/config.h"

namespace semmoe::engine::forward::testing {

model::ModelConfig RandomModelConfig(model::Arch arch);
// How RandomWeights draws: normal (the tests' models), or uniform of the same deviation
// (RandomDraws::FillUniform) — about 20x faster, for billions of weights.
struct RandomFill {
  bool fast_uniform = false;
  float stddev = 0.08f;  // Of the weights; norms are 1 ± 0.1 either way.
};
model::ModelWeights RandomWeights(const model::ModelConfig& config, uint64_t seed,
                                  const RandomFill& fill = {});

// Qwen3-30B-A3B's config.json (Hugging Face: hidden 2048, 32 query and 4 KV heads of 128, 128
// experts of 768, top-8, vocabulary 151,936), with `layers` of its 48 layers: a production shape
// for benchmarks (tools/bench_gpu_forward). About 0.62 G weights per layer plus 0.62 G for the
// embedding and lm_head.
absl::StatusOr<model::ModelConfig> Qwen3A3bConfig(int layers);

}  // namespace semmoe::engine::forward::testing

#endif  // SEMMOE_ENGINE_FORWARD_TESTING_RANDOM_MODEL_H_
