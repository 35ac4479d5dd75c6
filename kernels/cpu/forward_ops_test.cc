#include "kernels/cpu/forward_ops.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/dtype.h"

namespace semmoe::kernels::cpu {
namespace {

TEST(ForwardOpsTest, GatherRowsByIndexPicksRowsInIndexOrder) {
  const float table[] = {0, 1, 10, 11, 20, 21};  // 3 rows of 2.
  const int32_t index[] = {2, 0, 2};
  std::vector<float> out(6);
  GatherRowsByIndex(table, index, 3, 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{20, 21, 0, 1, 20, 21}));
  GatherRowsByIndex(table, index, 0, 2, nullptr);  // Empty: touches nothing.
}

TEST(ForwardOpsTest, AddRowBiasSkipsTheStridePadding) {
  std::vector<float> x = {1, 2, -1, 3, 4, -1};  // 2 rows of width 2, stride 3.
  const float bias[] = {10, 20};
  AddRowBias(x.data(), 2, 2, 3, bias);
  EXPECT_EQ(x, (std::vector<float>{11, 22, -1, 13, 24, -1}));
}

TEST(ForwardOpsTest, AddInPlaceAndSigmoidGateAdd) {
  std::vector<float> x = {1, 2, 3, 4};
  const std::vector<float> y = {1, 1, 2, 2};
  AddInPlace(x.data(), y.data(), 4);
  EXPECT_EQ(x, (std::vector<float>{2, 3, 5, 6}));
  const float gate[] = {0.0f, 2.0f};  // sigmoid: 0.5 and 1 / (1 + e^-2).
  SigmoidGateAdd(x.data(), y.data(), gate, 2, 2);
  EXPECT_FLOAT_EQ(x[0], 2.5f);
  EXPECT_FLOAT_EQ(x[1], 3.5f);
  const float g = 1.0f / (1.0f + std::exp(-2.0f));
  EXPECT_FLOAT_EQ(x[2], 5 + 2 * g);
  EXPECT_FLOAT_EQ(x[3], 6 + 2 * g);
}

TEST(ForwardOpsTest, ScatterAddRowsAddsEachRowIntoItsTarget) {
  std::vector<float> dst = {1, 1, 2, 2, 3, 3};  // 3 rows of 2.
  const float src[] = {10, 20, 30, 40};
  const int32_t index[] = {2, 0};
  ScatterAddRows(dst.data(), src, index, 2, 2);
  EXPECT_EQ(dst, (std::vector<float>{31, 41, 2, 2, 13, 23}));
}

TEST(ForwardOpsTest, StorePagedKvFollowsEachSequencesPageTable) {
  // Page size 2, width 1, 4 pages. Sequence 0 owns pages {3, 1}, sequence 1 owns {0}.
  const int32_t page_table[] = {3, 1, 0, -1};  // max_pages 2; -1 never read.
  const float rows[] = {7, 8, 9};
  const int32_t seq[] = {0, 0, 1};
  const int32_t pos[] = {1, 2, 0};  // seq 0 pos 1 → page 3 slot 1; pos 2 → page 1 slot 0.
  std::vector<float> cache(8, 0);
  StorePagedKv({rows, 3, 1, seq, pos, page_table, 2, 2, cache.data()});
  EXPECT_EQ(cache, (std::vector<float>{9, 0, 8, 0, 0, 0, 0, 7}));
}

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST(ForwardOpsTest, RoundToBf16IsNearestEven) {
  const float x[] = {1.0f,
                     FromBits(0x3F808000u),  // Halfway between 0x3F80 and 0x3F81: to even 0x3F80.
                     FromBits(0x3F818000u),  // Halfway between 0x3F81 and 0x3F82: to even 0x3F82.
                     FromBits(0x3F808001u),  // Just above halfway: up.
                     -2.5f,
                     std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::max(),  // Rounds to infinity.
                     std::numeric_limits<float>::quiet_NaN()};
  uint16_t out[8];
  RoundToBf16(x, 8, out);
  EXPECT_EQ(out[0], 0x3F80);
  EXPECT_EQ(out[1], 0x3F80);
  EXPECT_EQ(out[2], 0x3F82);
  EXPECT_EQ(out[3], 0x3F81);
  EXPECT_EQ(out[4], 0xC020);
  EXPECT_EQ(out[5], 0x7F80);
  EXPECT_EQ(out[6], 0x7F80);
  EXPECT_TRUE(std::isnan(Bf16ToF32(BF16{out[7]})));
  for (int i = 0; i < 7; ++i) EXPECT_EQ(out[i], F32ToBf16(x[i]).bits) << i;
}

}  // namespace
}  // namespace semmoe::kernels::cpu
