// RandomDraws: the one seeded source of random weights for the tests' models, in memory
// (engine/forward/testing:random_model) and as checkpoints (tiny_model). Normal draws are
// Box-Muller over mt19937_64, so a seed gives the same values with any standard library
// (std::normal_distribution's algorithm is implementation-defined); uniform draws (the fast fill,
// for billions of weights) come from a splitmix64 stream, in parallel for large fills.
//
// Thread-compatible.
#ifndef SEMMOE_ENGINE_MODEL_TESTING_RANDOM_DRAWS_H_
#define SEMMOE_ENGINE_MODEL_TESTING_RANDOM_DRAWS_H_

#include <cstdint>
#include <random>

namespace semmoe::testing {

class RandomDraws {
 public:
  explicit RandomDraws(uint64_t seed) : engine_(seed), stream_(seed) {}

  // One draw of N(mean, std²).
  float Normal(float mean, float std);
  // n draws of N(mean, std²), in order.
  void FillNormal(float* out, int64_t n, float mean, float std);
  // n draws uniform on mean ± std·√3 (deviation std) from the splitmix64 stream: the i-th from
  // the stream's state + (i + 1)·γ, the same values whichever thread computes them, so large fills
  // run on every core. About 20x faster than FillNormal.
  void FillUniform(float* out, int64_t n, float mean, float std);

 private:
  std::mt19937_64 engine_;  // Normal draws.
  uint64_t stream_;         // The splitmix64 state of uniform draws.
};

}  // namespace semmoe::testing

#endif  // SEMMOE_ENGINE_MODEL_TESTING_RANDOM_DRAWS_H_
