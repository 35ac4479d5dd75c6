#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/forward_ops.h"
#include "kernels/dtype.h"

namespace semmoe::kernels::cpu {
namespace {

// Against softmax(q·kᵀ · scale) · v computed in double over contiguous rows, for sequences
// whose pages are scattered, GQA groups, prefill (every position) and decode (the last); values
// of the keys' head size, and of another (v_head_dim: MLA's expanded form).
class PagedAttentionValuesTest : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(ValueHeads, PagedAttentionValuesTest, ::testing::Values(0, 5, 12));

TEST_P(PagedAttentionValuesTest, MatchesContiguousAttentionThroughScatteredPages) {
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
  const int v_dim = GetParam() > 0 ? GetParam() : head_dim;
  const int64_t v_row = kv_heads * v_dim;
  std::vector<float> k(static_cast<size_t>(pages) * page_size * row);
  std::vector<float> v(static_cast<size_t>(pages) * page_size * v_row);
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
  std::vector<float> q(tokens * q_heads * head_dim), out(tokens * q_heads * v_dim);
  for (float& x : q) x = normal(rng);
  const float scale = 0.35f;
  PagedAttention({.q = q.data(),
                  .tokens = tokens,
                  .q_heads = q_heads,
                  .kv_heads = kv_heads,
                  .head_dim = head_dim,
                  .k_cache = k.data(),
                  .v_cache = v.data(),
                  .page_size = page_size,
                  .page_table = table.data(),
                  .max_pages = max_pages,
                  .seq_of_token = seq.data(),
                  .position = pos.data(),
                  .scale = scale,
                  .out = out.data(),
                  .v_head_dim = GetParam()});
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
      for (int i = 0; i < v_dim; ++i) {
        double want = 0;
        for (int p = 0; p <= pos[t]; ++p) {
          const int64_t slot =
              table[seq[t] * max_pages + p / page_size] * page_size + p % page_size;
          want += w[p] / sum * v[slot * v_row + kvh * v_dim + i];
        }
        EXPECT_NEAR(out[(t * q_heads + h) * v_dim + i], want, 1e-5) << t << " " << h;
      }
    }
  }
}

// A bf16 cache: StorePagedKv rounds each row (nearest even), and attention over it equals
// attention over an f32 cache holding the rounded values (the widening is exact).
TEST(PagedAttentionTest, Bf16CacheIsTheRoundedF32Cache) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  const int head_dim = 8, q_heads = 2, kv_heads = 1, page_size = 2, max_pages = 4, pages = 8;
  const int64_t width = kv_heads * head_dim, tokens = 7;
  const std::vector<int32_t> table = {6, 1, 4, 3, 0, 2, 7, 5};  // [2 sequences, 4 pages].
  std::vector<int32_t> seq = {0, 0, 0, 0, 1, 1, 1}, pos = {0, 1, 2, 3, 0, 1, 2};
  std::vector<float> k(tokens * width), v(k.size()), q(tokens * q_heads * head_dim);
  for (std::vector<float>* x : {&k, &v, &q}) {
    for (float& f : *x) f = normal(rng);
  }
  const size_t cache = static_cast<size_t>(pages) * page_size * width;
  std::vector<uint16_t> k16(cache), v16(cache);
  std::vector<float> k32(cache, 0.0f), v32(cache, 0.0f);
  for (auto [rows, c16, c32] : {std::tuple{&k, &k16, &k32}, std::tuple{&v, &v16, &v32}}) {
    StorePagedKv({.rows = rows->data(),
                  .tokens = tokens,
                  .width = width,
                  .seq_of_token = seq.data(),
                  .position = pos.data(),
                  .page_table = table.data(),
                  .max_pages = max_pages,
                  .page_size = page_size,
                  .cache16 = c16->data()});
    StorePagedKv({.rows = rows->data(),
                  .tokens = tokens,
                  .width = width,
                  .seq_of_token = seq.data(),
                  .position = pos.data(),
                  .page_table = table.data(),
                  .max_pages = max_pages,
                  .page_size = page_size,
                  .cache = c32->data()});
    for (size_t i = 0; i < cache; ++i) {
      ASSERT_EQ((*c16)[i], F32ToBf16((*c32)[i]).bits) << i;
      (*c32)[i] = Bf16ToF32(BF16{(*c16)[i]});
    }
  }
  std::vector<float> got(q.size()), want(q.size());
  PagedAttentionArgs a{q.data(),   tokens,     q_heads,   kv_heads,     head_dim,
                       k32.data(), v32.data(), page_size, table.data(), max_pages,
                       seq.data(), pos.data(), 0.3f,      want.data()};
  PagedAttention(a);
  a.k_cache = a.v_cache = nullptr;
  a.k_cache16 = k16.data();
  a.v_cache16 = v16.data();
  a.out = got.data();
  PagedAttention(a);
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace semmoe::kernels::cpu
