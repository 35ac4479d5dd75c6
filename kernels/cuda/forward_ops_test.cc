// The GPU forward glue against kernels/cpu/forward_ops on random shapes, empty ones included.
// Needs a GPU (tag gpu).
#include "kernels/cuda/forward_ops.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/forward_ops.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/testing/device_memory.h"
#include "kernels/cuda/testing/error_report.h"

namespace semmoe::kernels::cuda {
namespace {

using testing::ToDevice;
using testing::ToHost;

class ForwardOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto devices = DeviceCount();
    ASSERT_TRUE(devices.ok() && *devices > 0) << "needs a GPU";
  }
  std::vector<float> Random(int64_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = normal_(rng_);
    return v;
  }
  std::mt19937 rng_{11};
  std::normal_distribution<float> normal_;
};

TEST_F(ForwardOpsTest, GatherRowsByIndex) {
  for (int64_t rows : {0, 1, 5, 700}) {
    for (int64_t width : {1, 33, 1024}) {
      const int64_t table_rows = 97;
      const std::vector<float> table = Random(table_rows * width);
      std::vector<int32_t> index(rows);
      for (int32_t& i : index) i = static_cast<int32_t>(rng_() % table_rows);
      std::vector<float> want(rows * width);
      cpu::GatherRowsByIndex(table.data(), index.data(), rows, width, want.data());
      float* d_table = ToDevice(table);
      int32_t* d_index = ToDevice(index);
      float* d_out = ToDevice(std::vector<float>(rows * width));
      ASSERT_EQ(LaunchGatherRowsByIndex(d_table, d_index, rows, width, d_out, nullptr),
                cudaSuccess);
      EXPECT_EQ(ToHost(d_out, want.size()), want) << rows << "x" << width;  // Copies: exact.
      cudaFree(d_table);
      cudaFree(d_index);
      cudaFree(d_out);
    }
  }
}

TEST_F(ForwardOpsTest, AddsAreExact) {
  for (int64_t rows : {0, 1, 9, 300}) {
    for (int64_t width : {1, 64, 1000}) {
      const int64_t stride = width + 5;
      std::vector<float> x = Random(rows * stride), bias = Random(width);
      std::vector<float> y = Random(rows * stride), gate = Random(rows);
      std::vector<float> want = x;
      cpu::AddRowBias(want.data(), rows, width, stride, bias.data());
      cpu::AddInPlace(want.data(), y.data(), rows * stride);
      float* d_x = ToDevice(x);
      float* d_bias = ToDevice(bias);
      float* d_y = ToDevice(y);
      ASSERT_EQ(LaunchAddRowBias(d_x, rows, width, stride, d_bias, nullptr), cudaSuccess);
      ASSERT_EQ(LaunchAddInPlace(d_x, d_y, rows * stride, nullptr), cudaSuccess);
      EXPECT_EQ(ToHost(d_x, want.size()), want);  // One f32 add per element: exact.

      // The gated add over packed rows [rows, stride].
      float* d_gate = ToDevice(gate);
      cpu::SigmoidGateAdd(want.data(), y.data(), gate.data(), rows, stride);
      ASSERT_EQ(LaunchSigmoidGateAdd(d_x, d_y, d_gate, rows, stride, nullptr), cudaSuccess);
      const std::vector<float> got = ToHost(d_x, want.size());
      testing::ErrorReport::Add("sigmoid_gate_add", got, want);
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 1e-5f * std::max(1.0f, std::abs(want[i]))) << i;
      }
      cudaFree(d_x);
      cudaFree(d_bias);
      cudaFree(d_y);
      cudaFree(d_gate);
    }
  }
}

TEST_F(ForwardOpsTest, ScatterAddRowsIntoDistinctRows) {
  for (int64_t rows : {0, 1, 37, 500}) {
    for (int64_t width : {1, 96, 1030}) {
      const int64_t targets = rows + 11;
      std::vector<int32_t> index(targets);
      std::iota(index.begin(), index.end(), 0);
      std::shuffle(index.begin(), index.end(), rng_);
      index.resize(rows);  // Distinct targets in a random order.
      const std::vector<float> src = Random(rows * width);
      std::vector<float> dst = Random(targets * width), want = dst;
      cpu::ScatterAddRows(want.data(), src.data(), index.data(), rows, width);
      float* d_dst = ToDevice(dst);
      float* d_src = ToDevice(src);
      int32_t* d_index = ToDevice(index);
      ASSERT_EQ(LaunchScatterAddRows(d_dst, d_src, d_index, rows, width, nullptr), cudaSuccess);
      EXPECT_EQ(ToHost(d_dst, want.size()), want);  // One add per element: exact.
      cudaFree(d_dst);
      cudaFree(d_src);
      cudaFree(d_index);
    }
  }
}

TEST_F(ForwardOpsTest, StorePagedKvThroughShuffledPageTables) {
  for (int page_size : {1, 16}) {
    for (int64_t width : {8, 256}) {
      // Sequences of ragged lengths (one empty), pages handed out in a shuffled order.
      const std::vector<int> lengths = {5, 0, 33, 1};
      const int max_pages = (33 + page_size - 1) / page_size;
      const int pages = max_pages * static_cast<int>(lengths.size());
      std::vector<int32_t> ids(pages);
      std::iota(ids.begin(), ids.end(), 0);
      std::shuffle(ids.begin(), ids.end(), rng_);
      std::vector<int32_t> table(ids.begin(), ids.end());  // [sequences, max_pages]
      std::vector<int32_t> seq, pos;
      for (size_t s = 0; s < lengths.size(); ++s) {
        for (int p = 0; p < lengths[s]; ++p) {
          seq.push_back(static_cast<int32_t>(s));
          pos.push_back(p);
        }
      }
      const int64_t tokens = static_cast<int64_t>(seq.size());
      const std::vector<float> rows = Random(tokens * width);
      std::vector<float> want(static_cast<size_t>(pages) * page_size * width, -1.0f);
      cpu::StorePagedKv({rows.data(), tokens, width, seq.data(), pos.data(), table.data(),
                         max_pages, page_size, want.data()});
      float* d_rows = ToDevice(rows);
      int32_t* d_seq = ToDevice(seq);
      int32_t* d_pos = ToDevice(pos);
      int32_t* d_table = ToDevice(table);
      float* d_cache = ToDevice(std::vector<float>(want.size(), -1.0f));
      ASSERT_EQ(LaunchStorePagedKv(
                    {d_rows, tokens, width, d_seq, d_pos, d_table, max_pages, page_size, d_cache},
                    nullptr),
                cudaSuccess);
      EXPECT_EQ(ToHost(d_cache, want.size()), want);
      // The bf16 cache: the same rows, rounded to nearest even as the CPU rounds them.
      std::vector<uint16_t> want16(want.size(), 0xFFFF);
      cpu::StorePagedKv({.rows = rows.data(),
                         .tokens = tokens,
                         .width = width,
                         .seq_of_token = seq.data(),
                         .position = pos.data(),
                         .page_table = table.data(),
                         .max_pages = max_pages,
                         .page_size = page_size,
                         .cache16 = want16.data()});
      uint16_t* d_cache16 = ToDevice(std::vector<uint16_t>(want.size(), 0xFFFF));
      ASSERT_EQ(LaunchStorePagedKv({.rows = d_rows,
                                    .tokens = tokens,
                                    .width = width,
                                    .seq_of_token = d_seq,
                                    .position = d_pos,
                                    .page_table = d_table,
                                    .max_pages = max_pages,
                                    .page_size = page_size,
                                    .cache16 = d_cache16},
                                   nullptr),
                cudaSuccess);
      EXPECT_EQ(ToHost(d_cache16, want16.size()), want16);
      for (void* p : {static_cast<void*>(d_rows), static_cast<void*>(d_seq),
                      static_cast<void*>(d_pos), static_cast<void*>(d_table),
                      static_cast<void*>(d_cache), static_cast<void*>(d_cache16)}) {
        cudaFree(p);
      }
    }
  }
}

TEST_F(ForwardOpsTest, RoundToBf16MatchesTheCpuBitForBit) {
  for (int64_t n : {0, 1, 1000, 300001}) {
    std::vector<float> x = Random(n);
    for (int64_t i = 0; i < n; i += 97) x[i] *= 1e30f;  // Some overflow to infinity.
    if (n > 3) x[3] = std::numeric_limits<float>::infinity();
    std::vector<uint16_t> want(n);
    cpu::RoundToBf16(x.data(), n, want.data());
    float* d_x = ToDevice(x);
    uint16_t* d_out = ToDevice(std::vector<uint16_t>(n));
    ASSERT_EQ(LaunchRoundToBf16(d_x, n, d_out, nullptr), cudaSuccess);
    EXPECT_EQ(ToHost(d_out, n), want) << n;  // Both nearest-even: the same bits.
    cudaFree(d_x);
    cudaFree(d_out);
  }
}

// Every finite code (the loader refuses NaN codes), stacked matrices, partial edge blocks.
TEST_F(ForwardOpsTest, DequantizeFp8MatchesTheCpuBitForBit) {
  struct Shape {
    int64_t count, rows, cols;
    int block_rows, block_cols;
  };
  for (const Shape& sh : {Shape{1, 0, 8, 4, 4}, Shape{1, 40, 64, 16, 16}, Shape{3, 64, 40, 16, 24},
                          Shape{2, 576, 300, 128, 128}}) {
    const int64_t n = sh.count * sh.rows * sh.cols;
    const int64_t scales_n = sh.count * ((sh.rows + sh.block_rows - 1) / sh.block_rows) *
                             ((sh.cols + sh.block_cols - 1) / sh.block_cols);
    std::vector<uint8_t> codes(n);
    for (int64_t i = 0; i < n; ++i) {
      codes[i] = static_cast<uint8_t>(i % 256 ^ (i / 256) % 7);
      if ((codes[i] & 0x7F) == 0x7F) codes[i] ^= 1;  // NaN → ±448.
    }
    std::vector<float> scales = Random(scales_n);
    std::vector<uint16_t> want(n);
    Fp8DequantArgs a{.codes = codes.data(), .scales = scales.data(), .count = sh.count,
                     .rows = sh.rows, .cols = sh.cols, .block_rows = sh.block_rows,
                     .block_cols = sh.block_cols, .out = want.data()};
    cpu::DequantizeFp8(a);
    uint8_t* d_codes = ToDevice(codes);
    float* d_scales = ToDevice(scales);
    uint16_t* d_out = ToDevice(std::vector<uint16_t>(n));
    a.codes = d_codes, a.scales = d_scales, a.out = d_out;
    ASSERT_EQ(LaunchDequantizeFp8(a, nullptr), cudaSuccess);
    EXPECT_EQ(ToHost(d_out, n), want) << sh.rows << "x" << sh.cols;
    cudaFree(d_codes);
    cudaFree(d_scales);
    cudaFree(d_out);
  }
}

}  // namespace
}  // namespace semmoe::kernels::cuda
