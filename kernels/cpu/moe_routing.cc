#include "kernels/cpu/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/types/span.h"
#include "kernels/cpu/nn_ops.h"

namespace semmoe::kernels::cpu {

namespace {

// Sets choice[e] = −inf for every expert outside the topk_groups best groups. −inf, as DeepSeek's
// inference code, vLLM and SGLang mask; transformers masks with 0, which differs only when every
// allowed choice is negative (a config holds k experts in the kept groups).
void MaskGroups(const RouterGatingArgs& a, absl::Span<float> choice,
                std::vector<float>& group_scores, std::vector<int32_t>& kept,
                std::vector<float>& kept_scores) {
  const int size = a.experts / a.groups;
  group_scores.resize(a.groups);
  for (int g = 0; g < a.groups; ++g) {
    const float* v = choice.data() + static_cast<size_t>(g) * size;
    if (a.group_score == GroupScore::kMax) {
      group_scores[g] = *std::max_element(v, v + size);
      continue;
    }
    float best = -INFINITY, second = -INFINITY;
    for (int i = 0; i < size; ++i) {
      if (v[i] > best) {
        second = best;
        best = v[i];
      } else if (v[i] > second) {
        second = v[i];
      }
    }
    group_scores[g] = best + second;
  }
  kept.resize(a.topk_groups);
  kept_scores.resize(a.topk_groups);
  TopK(group_scores, a.topk_groups, kept.data(), kept_scores.data());
  std::vector<bool> keep(a.groups, false);
  for (int32_t g : kept) keep[g] = true;
  for (int g = 0; g < a.groups; ++g) {
    if (!keep[g]) std::fill_n(choice.data() + static_cast<size_t>(g) * size, size, -INFINITY);
  }
}

}  // namespace

void RouterGating(const RouterGatingArgs& a) {
  const int experts = a.experts, k = a.k;
  const bool grouped = a.groups > 1;
  std::vector<float> scores(experts), choice(experts), chosen(k), group_scores, kept_scores;
  std::vector<int32_t> kept;
  for (int64_t t = 0; t < a.tokens; ++t) {
    std::memcpy(scores.data(), a.logits + t * experts, sizeof(float) * experts);
    if (a.scoring == GateScoring::kSoftmax) {
      Softmax(absl::MakeSpan(scores));
    } else {
      for (float& v : scores) v = 1.0f / (1.0f + std::exp(-v));
    }
    int32_t* ids = a.ids + t * k;
    float* w = a.weights + t * k;
    if (a.bias == nullptr && !grouped) {
      TopK(scores, k, ids, w);
    } else {  // Chosen by score + bias; weighted by the unbiased score.
      for (int e = 0; e < experts; ++e) choice[e] = scores[e] + (a.bias ? a.bias[e] : 0.0f);
      if (grouped) MaskGroups(a, absl::MakeSpan(choice), group_scores, kept, kept_scores);
      TopK(choice, k, ids, chosen.data());
      for (int j = 0; j < k; ++j) w[j] = scores[ids[j]];
    }
    if (a.renormalize) {
      float sum = 0.0f;
      for (int j = 0; j < k; ++j) sum += w[j];
      const float divisor = sum + a.renormalize_epsilon;
      for (int j = 0; j < k; ++j) w[j] = w[j] / divisor * a.scale;
    } else if (a.scale != 1.0f) {
      for (int j = 0; j < k; ++j) w[j] *= a.scale;
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
  // Entry by entry over whole rows (contiguous, so the inner loop vectorises); each element
  // still sums its k terms in entry order from zero.
  for (int64_t t = 0; t < a.tokens; ++t) {
    float* out = a.out + t * a.hidden;
    std::fill_n(out, a.hidden, 0.0f);
    for (int j = 0; j < a.k; ++j) {
      const float w = a.weights[t * a.k + j];
      const float* y = a.y + a.position_of_entry[t * a.k + j] * a.hidden;
      for (int64_t h = 0; h < a.hidden; ++h) out[h] += w * y[h];
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
