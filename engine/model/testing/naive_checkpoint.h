// Float64 building blocks of the naive reference forwards (architectures_test,
// deepseek_architectures_test): tensors read by their Hugging Face names straight from the
// checkpoint, one token at a time, nothing shared with the engine's kernels.
#ifndef SEMMOE_ENGINE_MODEL_TESTING_NAIVE_CHECKPOINT_H_
#define SEMMOE_ENGINE_MODEL_TESTING_NAIVE_CHECKPOINT_H_

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/safetensors.h"

namespace semmoe::testing {

using Vec = std::vector<double>;

class NaiveCheckpoint {
 public:
  explicit NaiveCheckpoint(const kernels::Checkpoint& checkpoint) : checkpoint_(checkpoint) {}

  bool Has(const std::string& name) const { return checkpoint_.Info(name).ok(); }

  // The tensor as f32 values (cached).
  const std::vector<float>& T(const std::string& name) {
    auto it = cache_.find(name);
    if (it != cache_.end()) return it->second;
    auto t = checkpoint_.ReadF32(name);
    EXPECT_TRUE(t.ok()) << t.status();
    std::vector<float> values;
    if (t.ok()) values.assign(t->data<float>(), t->data<float>() + t->numel());
    return cache_[name] = std::move(values);
  }
  // Row `row` of a [rows, width] matrix.
  Vec Row(const std::string& name, int row, int width) {
    const auto& w = T(name);
    return Vec(w.begin() + static_cast<size_t>(row) * width,
               w.begin() + static_cast<size_t>(row + 1) * width);
  }
  // x · Wᵀ (+ bias when the checkpoint has `<prefix>.bias`), W = `<prefix>.weight` [out, in].
  Vec Linear(const Vec& x, const std::string& prefix) {
    const auto& w = T(prefix + ".weight");
    Vec y(w.size() / x.size(), 0.0);
    for (size_t o = 0; o < y.size(); ++o) {
      for (size_t i = 0; i < x.size(); ++i) y[o] += w[o * x.size() + i] * x[i];
    }
    if (Has(prefix + ".bias")) {
      const auto& b = T(prefix + ".bias");
      for (size_t o = 0; o < y.size(); ++o) y[o] += b[o];
    }
    return y;
  }
  Vec Rms(const Vec& x, const std::string& weight, double eps) {
    const auto& w = T(weight);
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / x.size() + eps);
    Vec out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = w[i] * x[i] * inv;
    return out;
  }
  // down(silu(gate(h)) ⊙ up(h)).
  Vec Mlp(const Vec& h, const std::string& prefix, const std::string& gate = "gate_proj",
          const std::string& up = "up_proj", const std::string& down = "down_proj") {
    Vec g = Linear(h, prefix + gate), u = Linear(h, prefix + up);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
    return Linear(g, prefix + down);
  }
  static void Softmax(Vec& v) {
    const double m = *std::max_element(v.begin(), v.end());
    double sum = 0;
    for (double& x : v) sum += (x = std::exp(x - m));
    for (double& x : v) x /= sum;
  }
  static void Add(Vec& a, const Vec& b) {
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  }

 private:
  const kernels::Checkpoint& checkpoint_;
  std::map<std::string, std::vector<float>> cache_;
};

}  // namespace semmoe::testing

#endif  // SEMMOE_ENGINE_MODEL_TESTING_NAIVE_CHECKPOINT_H_
