// Token sampling: greedy, or seeded temperature / top-k / top-p.
//
// Each request owns a Sampler; its generator is seeded from SamplingParams::seed, so a request's
// tokens depend only on its own logits and seed — not on what it was batched with.
#ifndef SEMMOE_ENGINE_RUNTIME_SAMPLER_H_
#define SEMMOE_ENGINE_RUNTIME_SAMPLER_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace semmoe::engine::runtime {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy (argmax, lowest id on ties). Must be ≥ 0.
  int top_k = 0;             // Keep the k most likely tokens; 0: all.
  float top_p = 1.0f;        // Keep the smallest set with probability ≥ top_p; in (0, 1].
  uint64_t seed = 0;
};

// InvalidArgument naming the field.
absl::Status ValidateSamplingParams(const SamplingParams& params);

class Sampler {
 public:
  // REQUIRES: ValidateSamplingParams(params).ok().
  explicit Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

  // REQUIRES: !logits.empty().
  int32_t Sample(absl::Span<const float> logits);

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> scratch_;
};

}  // namespace semmoe::engine::runtime

#endif  // SEMMOE_ENGINE_RUNTIME_SAMPLER_H_
