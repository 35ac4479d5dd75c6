#include "kernels/cpu/moe_routing.h"

#include <algorithm>
#include <cstring>
#include <vector>

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

void PermuteByExpert(const PermuteByExpertArgs& a) {
  std::fill(a.offsets, a.offsets + a.experts + 1, 0);
  for (int64_t i = 0; i < a.entries; ++i) ++a.offsets[a.ids[i] + 1];
  for (int e = 0; e < a.experts; ++e) {
    a.counts[e] = a.offsets[e + 1];
    a.offsets[e + 1] += a.offsets[e];
  }
  std::vector<int64_t> next(a.offsets, a.offsets + a.experts);
  for (int64_t i = 0; i < a.entries; ++i) {
    const int64_t pos = next[a.ids[i]]++;
    a.entry_of_position[pos] = i;
    a.position_of_entry[i] = pos;
  }
}

void GatherRows(const GatherRowsArgs& a) {
  for (int64_t p = 0; p < a.entries; ++p) {
    std::memcpy(a.y + p * a.hidden, a.x + (a.entry_of_position[p] / a.k) * a.hidden,
                sizeof(float) * a.hidden);
  }
}

void CombineRows(const CombineRowsArgs& a) {
  for (int64_t t = 0; t < a.tokens; ++t) {
    for (int64_t h = 0; h < a.hidden; ++h) {
      float sum = 0;
      for (int j = 0; j < a.k; ++j) {
        const int64_t pos = a.position_of_entry[t * a.k + j];
        sum += a.weights[t * a.k + j] * a.y[pos * a.hidden + h];
      }
      a.out[t * a.hidden + h] = sum;
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
