#include "engine/model/testing/random_draws.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

namespace semmoe::testing {
namespace {

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;  // splitmix64's increment.

// splitmix64's output for `state`, as a uniform value on ±√3 (mean 0, deviation 1).
float Uniform(uint64_t state) {
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  constexpr float kUnit = 1.0f / 16777216.0f;  // 24 bits → [0, 1).
  return 1.7320508f * (2.0f * static_cast<float>(z >> 40) * kUnit - 1.0f);
}

}  // namespace

float RandomDraws::Normal(float mean, float std) {
  const double u1 = (static_cast<double>(engine_() >> 11) + 0.5) / 9007199254740992.0;
  const double u2 = static_cast<double>(engine_() >> 11) / 9007199254740992.0;
  return mean + std * static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                                         std::cos(6.283185307179586 * u2));
}

void RandomDraws::FillNormal(float* out, int64_t n, float mean, float std) {
  for (int64_t i = 0; i < n; ++i) out[i] = Normal(mean, std);
}

void RandomDraws::FillUniform(float* out, int64_t n, float mean, float std) {
  const uint64_t base = stream_;
  auto fill = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      out[i] = mean + std * Uniform(base + static_cast<uint64_t>(i + 1) * kGamma);
    }
  };
  const int64_t threads =
      n < (1 << 20) ? 1 : std::max<int64_t>(1, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t) {
    pool.emplace_back(fill, n * t / threads, n * (t + 1) / threads);
  }
  fill(0, n / threads);
  for (std::thread& t : pool) t.join();
  stream_ += static_cast<uint64_t>(n) * kGamma;
}

}  // namespace semmoe::testing
