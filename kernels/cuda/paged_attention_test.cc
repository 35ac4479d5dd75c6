// Paged attention on the GPU against kernels/cpu/decode_attention: decode (one token per
// sequence at its last position) and prefill (every position, causal), GQA groups, pages
// scattered in the cache, sequences of different lengths. Needs a GPU (tag gpu).
#include "kernels/cuda/paged_attention.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/testing/device_memory.h"
#include "kernels/cuda/testing/error_report.h"
#include "kernels/dtype.h"

namespace semmoe::kernels::cuda {
namespace {

using testing::ToDevice;
using testing::ToHost;

TEST(PagedAttentionTest, MatchesTheCpuForDecodeAndPrefill) {
  auto devices = DeviceCount();
  ASSERT_TRUE(devices.ok() && *devices > 0) << "needs a GPU";
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  // 80 and 576: MLA's absorbed heads (kv_lora_rank + rope) of deepseek-v3-tiny and DeepSeek-V3;
  // 48 and 192 their expanded heads (nope + rope; engine/forward/mla_block.h), whose values are
  // 32 and 128 wide (v_head_dim; 0: the keys' size).
  for (auto [head_dim, v_head_dim] :
       {std::pair{32, 0}, std::pair{64, 0}, std::pair{128, 0}, std::pair{80, 0}, std::pair{576, 0},
        std::pair{48, 0}, std::pair{192, 0}, std::pair{48, 32}, std::pair{192, 128}}) {
    const int v_dim = v_head_dim > 0 ? v_head_dim : head_dim;
    for (auto [q_heads, kv_heads] : {std::pair{1, 1}, std::pair{8, 4}, std::pair{8, 1}}) {
      for (int page_size : {1, 16}) {
        const std::vector<int> lengths = {1, 7, 40, 129};  // Sequence lengths.
        const int max_pages = (129 + page_size - 1) / page_size;
        const int pages = static_cast<int>(lengths.size()) * max_pages;
        // Pages handed out in a shuffled order, so sequences are not contiguous.
        std::vector<int32_t> free(pages);
        std::iota(free.begin(), free.end(), 0);
        std::shuffle(free.begin(), free.end(), rng);
        std::vector<int32_t> table(lengths.size() * max_pages, 0);
        for (size_t s = 0, next = 0; s < lengths.size(); ++s) {
          for (int p = 0; p < (lengths[s] + page_size - 1) / page_size; ++p) {
            table[s * max_pages + p] = free[next++];
          }
        }
        const int64_t row = static_cast<int64_t>(kv_heads) * head_dim;
        std::vector<float> k(static_cast<int64_t>(pages) * page_size * row);
        std::vector<float> v(static_cast<int64_t>(pages) * page_size * kv_heads * v_dim);
        for (float& x : k) x = normal(rng);
        for (float& x : v) x = normal(rng);
        for (bool prefill : {false, true}) {
          std::vector<int32_t> seq, pos;
          for (size_t s = 0; s < lengths.size(); ++s) {
            for (int p = prefill ? 0 : lengths[s] - 1; p < lengths[s]; ++p) {
              seq.push_back(static_cast<int32_t>(s));
              pos.push_back(p);
            }
          }
          const int64_t tokens = seq.size();
          std::vector<float> q(tokens * q_heads * head_dim), want(tokens * q_heads * v_dim);
          for (float& x : q) x = normal(rng);
          const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
          PagedAttentionArgs host{q.data(),   tokens,     q_heads,   kv_heads,     head_dim,
                                  k.data(),   v.data(),   page_size, table.data(), max_pages,
                                  seq.data(), pos.data(), scale,     want.data()};
          host.v_head_dim = v_head_dim;
          cpu::PagedAttention(host);
          float *d_q = ToDevice(q), *d_k = ToDevice(k), *d_v = ToDevice(v),
                *d_out = ToDevice(std::vector<float>(want.size()));
          int32_t *d_table = ToDevice(table), *d_seq = ToDevice(seq), *d_pos = ToDevice(pos);
          PagedAttentionArgs device{d_q,   tokens, q_heads,   kv_heads, head_dim,
                                    d_k,   d_v,    page_size, d_table,  max_pages,
                                    d_seq, d_pos,  scale,     d_out};
          device.v_head_dim = v_head_dim;
          ASSERT_EQ(LaunchPagedAttention(device, nullptr), cudaSuccess);
          std::vector<float> got(want.size());
          ASSERT_EQ(cudaMemcpy(got.data(), d_out, 4 * got.size(), cudaMemcpyDeviceToHost),
                    cudaSuccess);
          testing::ErrorReport::Add(prefill ? "paged_attention prefill" : "paged_attention decode",
                                    got, want);
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 1e-4f * std::max(1.0f, std::abs(want[i])))
                << "head_dim " << head_dim << " v " << v_dim << " heads " << q_heads << "/"
                << kv_heads << " page " << page_size << (prefill ? " prefill" : " decode") << " i "
                << i;
          }
          for (void* p : {static_cast<void*>(d_q), static_cast<void*>(d_k), static_cast<void*>(d_v),
                          static_cast<void*>(d_out), static_cast<void*>(d_table),
                          static_cast<void*>(d_seq), static_cast<void*>(d_pos)}) {
            cudaFree(p);
          }
        }
      }
    }
  }
}

// A bf16 cache (the bf16 forward's): the kernel reads bits and widens them, as the CPU does.
TEST(PagedAttentionTest, Bf16CacheMatchesTheCpu) {
  auto devices = DeviceCount();
  ASSERT_TRUE(devices.ok() && *devices > 0) << "needs a GPU";
  std::mt19937 rng(10);
  std::normal_distribution<float> normal;
  const int head_dim = 128, q_heads = 8, kv_heads = 4, page_size = 16, max_pages = 9;
  const std::vector<int32_t> table = {3, 0, 8, 5, 1, 7, 2, 6, 4};  // One sequence of 129.
  const int64_t row = static_cast<int64_t>(kv_heads) * head_dim;
  std::vector<uint16_t> k(static_cast<int64_t>(max_pages) * page_size * row), v(k.size());
  for (uint16_t& x : k) x = F32ToBf16(normal(rng)).bits;
  for (uint16_t& x : v) x = F32ToBf16(normal(rng)).bits;
  std::vector<int32_t> seq(129, 0), pos(129);
  std::iota(pos.begin(), pos.end(), 0);
  const int64_t tokens = 129;
  std::vector<float> q(tokens * q_heads * head_dim), want(q.size());
  for (float& x : q) x = normal(rng);
  PagedAttentionArgs args{q.data(),   tokens,     q_heads,   kv_heads,     head_dim,
                          nullptr,    nullptr,    page_size, table.data(), max_pages,
                          seq.data(), pos.data(), 0.088f,    want.data()};
  args.k_cache16 = k.data();
  args.v_cache16 = v.data();
  cpu::PagedAttention(args);
  float *d_q = ToDevice(q), *d_out = ToDevice(std::vector<float>(q.size()));
  uint16_t *d_k = ToDevice(k), *d_v = ToDevice(v);
  int32_t *d_table = ToDevice(table), *d_seq = ToDevice(seq), *d_pos = ToDevice(pos);
  PagedAttentionArgs d{d_q,       tokens,  q_heads,   kv_heads, head_dim, nullptr, nullptr,
                       page_size, d_table, max_pages, d_seq,    d_pos,    0.088f,  d_out};
  d.k_cache16 = d_k;
  d.v_cache16 = d_v;
  ASSERT_EQ(LaunchPagedAttention(d, nullptr), cudaSuccess);
  const std::vector<float> got = testing::ToHost(d_out, q.size());
  testing::ErrorReport::Add("paged_attention bf16 cache", got, want);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-4f * std::max(1.0f, std::abs(want[i]))) << i;
  }
  for (void* p : {static_cast<void*>(d_q), static_cast<void*>(d_k), static_cast<void*>(d_v),
                  static_cast<void*>(d_out), static_cast<void*>(d_table), static_cast<void*>(d_seq),
                  static_cast<void*>(d_pos)}) {
    cudaFree(p);
  }
}

TEST(PagedAttentionTest, BadShapesAreRefused) {
  EXPECT_EQ(
      LaunchPagedAttention(
          {.tokens = 1, .q_heads = 3, .kv_heads = 2, .head_dim = 32, .page_size = 1}, nullptr),
      cudaErrorInvalidValue);
  EXPECT_EQ(
      LaunchPagedAttention(
          {.tokens = 1, .q_heads = 1, .kv_heads = 1, .head_dim = 1056, .page_size = 1}, nullptr),
      cudaErrorInvalidValue);  // Keys over 1024 floats.
  EXPECT_EQ(LaunchPagedAttention({.tokens = 1,
                                  .q_heads = 1,
                                  .kv_heads = 1,
                                  .head_dim = 64,
                                  .page_size = 1,
                                  .v_head_dim = 1056},
                                 nullptr),
            cudaErrorInvalidValue);  // Values over 1024 floats.
}

}  // namespace
}  // namespace semmoe::kernels::cuda
