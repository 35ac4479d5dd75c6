#include "kernels/cpu/moe_routing.h"

#include <cstring>

#include "absl/types/span.h"
#include "kernels/cpu/nn_ops.h"

namespace semmoe::kernels::cpu {

void RouterGating(const RouterGatingArgs& a) {
  const float* logits = a.logits;
  const int64_t tokens = a.tokens;
  const int experts = a.experts, k = a.k;
  int32_t* ids = a.ids;
  float* weights = a.weights;
  std::vector<float> probs(experts);
  for (int64_t t = 0; t < tokens; ++t) {
    std::memcpy(probs.data(), logits + t * experts, sizeof(float) * experts);
    Softmax(absl::MakeSpan(probs));
    TopK(probs, k, ids + t * k, weights + t * k);
    if (a.renormalize) {
      float sum = 0;
      for (int j = 0; j < k; ++j) sum += weights[t * k + j];
      for (int j = 0; j < k; ++j) weights[t * k + j] /= sum;
    }
  }
}

Permutation PermuteByExpert(const int32_t* ids, int64_t entries, int experts) {
  Permutation p;
  p.offsets.assign(experts + 1, 0);
  for (int64_t i = 0; i < entries; ++i) ++p.offsets[ids[i] + 1];
  for (int e = 0; e < experts; ++e) p.offsets[e + 1] += p.offsets[e];
  std::vector<int64_t> next(p.offsets.begin(), p.offsets.end() - 1);
  p.entry_of_position.resize(entries);
  p.position_of_entry.resize(entries);
  for (int64_t i = 0; i < entries; ++i) {
    const int64_t pos = next[ids[i]]++;
    p.entry_of_position[pos] = i;
    p.position_of_entry[i] = pos;
  }
  return p;
}

void GatherRows(const float* x, const Permutation& perm, int k, int64_t hidden, float* y) {
  for (size_t p = 0; p < perm.entry_of_position.size(); ++p) {
    std::memcpy(y + p * hidden, x + (perm.entry_of_position[p] / k) * hidden,
                sizeof(float) * hidden);
  }
}

void CombineRows(const float* y, const float* weights, const Permutation& perm, int64_t tokens,
                 int k, int64_t hidden, float* out) {
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < hidden; ++h) {
      float sum = 0;
      for (int j = 0; j < k; ++j) {
        const int64_t pos = perm.position_of_entry[t * k + j];
        sum += weights[t * k + j] * y[pos * hidden + h];
      }
      out[t * hidden + h] = sum;
    }
  }
}

void ShufflePack(const float* x, const int32_t* order, int64_t rows, int64_t hidden,
                 float* packed) {
  for (int64_t p = 0; p < rows; ++p) {
    std::memcpy(packed + p * hidden, x + order[p] * hidden, sizeof(float) * hidden);
  }
}

void ShuffleUnpack(const float* packed, const int32_t* order, int64_t rows, int64_t hidden,
                   float* x) {
  for (int64_t p = 0; p < rows; ++p) {
    std::memcpy(x + order[p] * hidden, packed + p * hidden, sizeof(float) * hidden);
  }
}

}  // namespace semmoe::kernels::cpu
