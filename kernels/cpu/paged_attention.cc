#include "kernels/cpu/paged_attention.h"

#include <cstddef>
#include <vector>

#include "kernels/cpu/decode_attention.h"
#include "kernels/dtype.h"

namespace semmoe::kernels::cpu {

void PagedAttention(const PagedAttentionArgs& a) {
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
