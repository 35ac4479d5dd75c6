#include "kernels/cpu/paged_attention.h"

#include <cstddef>
#include <vector>

#include "absl/types/span.h"
#include "kernels/cpu/decode_attention.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/dtype.h"

namespace semmoe::kernels::cpu {
namespace {

// Values of another head size than the keys' (PagedAttentionArgs::v_head_dim): token by token,
// head by head, plainly — the reference for that case (the op sets' fast paths have their own).
void MixedHeadSizes(const PagedAttentionArgs& a) {
  const int dk = a.head_dim, dv = a.value_dim(), group = a.q_heads / a.kv_heads;
  const int64_t k_row = int64_t{a.kv_heads} * dk, v_row = int64_t{a.kv_heads} * dv;
  const bool bf16 = a.k_cache16 != nullptr;
  auto key = [&](int64_t i) { return bf16 ? Bf16ToF32(BF16{a.k_cache16[i]}) : a.k_cache[i]; };
  auto value = [&](int64_t i) { return bf16 ? Bf16ToF32(BF16{a.v_cache16[i]}) : a.v_cache[i]; };
  std::vector<float> scores;
  for (int64_t t = 0; t < a.tokens; ++t) {
    const int context = a.position[t] + 1;
    const int32_t* pages = a.page_table + int64_t{a.seq_of_token[t]} * a.max_pages;
    scores.resize(context);
    for (int h = 0; h < a.q_heads; ++h) {
      const int kv = h / group;
      const float* q = a.q + (t * a.q_heads + h) * dk;
      for (int p = 0; p < context; ++p) {
        const int64_t slot = int64_t{pages[p / a.page_size]} * a.page_size + p % a.page_size;
        float s = 0;
        for (int c = 0; c < dk; ++c) s += q[c] * key(slot * k_row + int64_t{kv} * dk + c);
        scores[p] = s * a.scale;
      }
      Softmax(absl::Span<float>(scores));
      float* out = a.out + (t * a.q_heads + h) * dv;
      for (int c = 0; c < dv; ++c) out[c] = 0;
      for (int p = 0; p < context; ++p) {
        const int64_t slot = int64_t{pages[p / a.page_size]} * a.page_size + p % a.page_size;
        for (int c = 0; c < dv; ++c)
          out[c] += scores[p] * value(slot * v_row + int64_t{kv} * dv + c);
      }
    }
  }
}

}  // namespace

void PagedAttention(const PagedAttentionArgs& a) {
  if (a.value_dim() != a.head_dim) {
    MixedHeadSizes(a);
    return;
  }
  const int64_t row = static_cast<int64_t>(a.kv_heads) * a.head_dim;
  const int group = a.q_heads / a.kv_heads;
  std::vector<const float*> keys, values;
  std::vector<float> scores, widened;  // A bf16 cache's rows of this token, as f32.
  for (int64_t t = 0; t < a.tokens; ++t) {
    const int context = a.position[t] + 1;
    keys.resize(context);
    values.resize(context);
    scores.resize(2 * static_cast<size_t>(context));
    const bool bf16 = a.k_cache16 != nullptr;
    if (bf16) widened.resize(2 * static_cast<size_t>(context) * row);
    const int32_t* pages = a.page_table + static_cast<int64_t>(a.seq_of_token[t]) * a.max_pages;
    for (int p = 0; p < context; ++p) {
      const int64_t slot =
          static_cast<int64_t>(pages[p / a.page_size]) * a.page_size + p % a.page_size;
      if (bf16) {
        float* k = widened.data() + 2 * p * row;
        for (int64_t i = 0; i < row; ++i) {
          k[i] = Bf16ToF32(BF16{a.k_cache16[slot * row + i]});
          k[row + i] = Bf16ToF32(BF16{a.v_cache16[slot * row + i]});
        }
        keys[p] = k;
        values[p] = k + row;
      } else {
        keys[p] = a.k_cache + slot * row;
        values[p] = a.v_cache + slot * row;
      }
    }
    for (int g = 0; g < a.kv_heads; ++g) {
      const int64_t head0 = (t * a.q_heads + static_cast<int64_t>(g) * group) * a.head_dim;
      DecodeAttention({a.q + head0, group, a.head_dim, keys.data(), values.data(),
                       static_cast<int64_t>(g) * a.head_dim, context, a.scale, scores.data(),
                       a.out + head0});
    }
  }
}

}  // namespace semmoe::kernels::cpu
