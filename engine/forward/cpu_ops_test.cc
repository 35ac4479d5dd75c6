// CpuOps' fast paths against the kernels' plain references on the same inputs: attention (runs
// of a sequence's tokens as products, in causal blocks, from any start position; decode tokens
// by the query-head group; values of their own head size) and the MoE combine.
#include "engine/forward/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/op_args.h"

namespace semmoe::engine::forward {
namespace {

std::vector<float> Random(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

struct AttentionCase {
  std::string name;
  int q_heads, kv_heads, head_dim, v_head_dim;
  bool values_are_keys = false;  // MLA's absorbed form: one cache of latent rows.
};
void PrintTo(const AttentionCase& c, std::ostream* os) { *os << c.name; }

class CpuOpsAttentionTest : public ::testing::TestWithParam<AttentionCase> {};

// Three sequences in one pass, pages shuffled: a chunk of 70 tokens after 10 cached (three
// causal blocks, the first starting mid-sequence), a fresh prompt of 33 (a block and one row),
// and a decode token at position 40.
TEST_P(CpuOpsAttentionTest, MatchesTheTokenByTokenReference) {
  const AttentionCase& c = GetParam();
  constexpr int kPageSize = 4, kMaxPages = 24;
  std::mt19937 rng(11);
  struct Run {
    int32_t start, tokens;
  };
  const std::vector<Run> runs = {{10, 70}, {0, 33}, {40, 1}};
  std::vector<int32_t> pages(runs.size() * kMaxPages);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), rng);
  std::vector<int32_t> seq_of_token, position;
  for (size_t s = 0; s < runs.size(); ++s) {
    for (int32_t i = 0; i < runs[s].tokens; ++i) {
      seq_of_token.push_back(static_cast<int32_t>(s));
      position.push_back(runs[s].start + i);
    }
  }
  const int64_t tokens = static_cast<int64_t>(position.size());
  const int dv = c.v_head_dim > 0 ? c.v_head_dim : c.head_dim;
  const size_t slots = pages.size() * kPageSize;
  const std::vector<float> q = Random(tokens * c.q_heads * c.head_dim, rng);
  const std::vector<float> k = Random(slots * c.kv_heads * c.head_dim, rng);
  const std::vector<float> v = Random(slots * c.kv_heads * dv, rng);
  std::vector<float> want(tokens * c.q_heads * dv, NAN), got(want.size(), NAN);
  kernels::PagedAttentionArgs a{.q = q.data(),
                                .tokens = tokens,
                                .q_heads = c.q_heads,
                                .kv_heads = c.kv_heads,
                                .head_dim = c.head_dim,
                                .k_cache = k.data(),
                                .v_cache = c.values_are_keys ? k.data() : v.data(),
                                .page_size = kPageSize,
                                .page_table = pages.data(),
                                .max_pages = kMaxPages,
                                .seq_of_token = seq_of_token.data(),
                                .position = position.data(),
                                .scale = 0.125f,
                                .out = want.data(),
                                .v_head_dim = c.v_head_dim};
  kernels::cpu::PagedAttention(a);
  a.out = got.data();
  CpuOps ops;
  ASSERT_TRUE(ops.PagedAttention(a).ok());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 2e-5f) << "token " << i / (c.q_heads * dv) << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuOpsAttentionTest,
    ::testing::Values(AttentionCase{"gqa_pairs", 4, 2, 32, 0},   // Decode per token (kernel).
                      AttentionCase{"gqa_groups", 8, 2, 16, 0},  // Decode by group products.
                      AttentionCase{"mla_absorbed", 8, 1, 80, 0, true},
                      AttentionCase{"mla_expanded", 4, 4, 48, 32}),  // Values of their own size.
    [](const ::testing::TestParamInfo<AttentionCase>& info) { return info.param.name; });

TEST(CpuOpsCombineTest, SumsEachTokensEntriesInOrder) {
  std::mt19937 rng(5);
  constexpr int64_t kTokens = 9, kHidden = 37;
  constexpr int kK = 3;
  const std::vector<float> y = Random(kTokens * kK * kHidden, rng);
  const std::vector<float> weights = Random(kTokens * kK, rng);
  std::vector<int64_t> position_of_entry(kTokens * kK);
  std::iota(position_of_entry.begin(), position_of_entry.end(), 0);
  std::shuffle(position_of_entry.begin(), position_of_entry.end(), rng);
  std::vector<float> out(kTokens * kHidden, NAN);
  CpuOps ops;
  ASSERT_TRUE(ops.CombineRows({.y = y.data(),
                               .weights = weights.data(),
                               .position_of_entry = position_of_entry.data(),
                               .tokens = kTokens,
                               .k = kK,
                               .hidden = kHidden,
                               .out = out.data()})
                  .ok());
  for (int64_t t = 0; t < kTokens; ++t) {
    for (int64_t h = 0; h < kHidden; ++h) {
      float sum = 0;
      for (int j = 0; j < kK; ++j) {
        sum += weights[t * kK + j] * y[position_of_entry[t * kK + j] * kHidden + h];
      }
      EXPECT_NEAR(out[t * kHidden + h], sum, 1e-5f * (1 + std::abs(sum))) << t << " " << h;
    }
  }
}

}  // namespace
}  // namespace semmoe::engine::forward
