#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace semmoe::kernels::cpu {
namespace {

// Against softmax(q·kᵀ · scale) · v computed in double over contiguous rows, for sequences
// whose pages are scattered, GQA groups, prefill (every position) and decode (the last).
TEST(PagedAttentionTest, MatchesContiguousAttentionThroughScatteredPages) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  const int head_dim = 8, q_heads = 4, kv_heads = 2, page_size = 3;
  const std::vector<int> lengths = {1, 5, 11};
  const int max_pages = 4, pages = 12;
  std::vector<int32_t> ids(pages);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  const std::vector<int32_t> table(ids.begin(), ids.end());  // [3 sequences, 4 pages].
  const int64_t row = kv_heads * head_dim;
  std::vector<float> k(static_cast<size_t>(pages) * page_size * row), v(k.size());
  for (float& x : k) x = normal(rng);
  for (float& x : v) x = normal(rng);
  std::vector<int32_t> seq, pos;
  for (size_t s = 0; s < lengths.size(); ++s) {
    for (int p = 0; p < lengths[s]; ++p) {
      seq.push_back(static_cast<int32_t>(s));
      pos.push_back(p);
    }
  }
  const int64_t tokens = static_cast<int64_t>(seq.size());
  std::vector<float> q(tokens * q_heads * head_dim), out(q.size());
  for (float& x : q) x = normal(rng);
  const float scale = 0.35f;
  PagedAttention({q.data(), tokens, q_heads, kv_heads, head_dim, k.data(), v.data(), page_size,
                  table.data(), max_pages, seq.data(), pos.data(), scale, out.data()});
  for (int64_t t = 0; t < tokens; ++t) {
    for (int h = 0; h < q_heads; ++h) {
      const int kvh = h / (q_heads / kv_heads);
      std::vector<double> w(pos[t] + 1);
      for (int p = 0; p <= pos[t]; ++p) {
        const int64_t slot = table[seq[t] * max_pages + p / page_size] * page_size + p % page_size;
        double dot = 0;
        for (int i = 0; i < head_dim; ++i) {
          dot += q[(t * q_heads + h) * head_dim + i] * k[slot * row + kvh * head_dim + i];
        }
        w[p] = dot * scale;
      }
      const double max = *std::max_element(w.begin(), w.end());
      double sum = 0;
      for (double& x : w) sum += (x = std::exp(x - max));
      for (int i = 0; i < head_dim; ++i) {
        double want = 0;
        for (int p = 0; p <= pos[t]; ++p) {
          const int64_t slot =
              table[seq[t] * max_pages + p / page_size] * page_size + p % page_size;
          want += w[p] / sum * v[slot * row + kvh * head_dim + i];
        }
        EXPECT_NEAR(out[(t * q_heads + h) * head_dim + i], want, 1e-5) << t << " " << h;
      }
    }
  }
}

}  // namespace
}  // namespace semmoe::kernels::cpu
