#include "kernels/cpu/grouped_swiglu.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace semmoe::kernels::cpu {
namespace {

constexpr uint16_t kOne = 0x3F80, kTwo = 0x4000, kZero = 0;  // bf16 bits of 1, 2, 0.

TEST(GroupedSwiGluTest, EachRowUsesItsExpertsWeights) {
  // hidden 1, inter 1; expert 0: gate 1, up 1, down 1; expert 1: gate 1, up 2, down 2.
  // Rows: [x=1] for expert 0 (none), [x=1, x=2] for expert 1; expert 0 has no rows.
  const uint16_t x[] = {kOne, kTwo};
  const int64_t offsets[] = {0, 0, 2};
  const uint16_t gate[] = {kOne, kOne}, up[] = {kOne, kTwo}, down[] = {kOne, kTwo};
  float out[2];
  GroupedSwiGlu({.x = x,
                 .offsets = offsets,
                 .experts = 2,
                 .rows = 2,
                 .hidden = 1,
                 .inter = 1,
                 .gate = gate,
                 .up = up,
                 .down = down,
                 .out = out});
  auto silu = [](float v) { return v / (1 + std::exp(-v)); };
  EXPECT_NEAR(out[0], 2 * silu(1) * 2 * 1, 1e-6);
  EXPECT_NEAR(out[1], 2 * silu(2) * 2 * 2, 1e-6);
  // Zero weights give zeros; no rows touch nothing.
  const uint16_t zeros[] = {kZero, kZero};
  GroupedSwiGlu({.x = x,
                 .offsets = offsets,
                 .experts = 2,
                 .rows = 2,
                 .hidden = 1,
                 .inter = 1,
                 .gate = zeros,
                 .up = up,
                 .down = down,
                 .out = out});
  EXPECT_EQ(out[0], 0.0f);
}

TEST(GroupedSwiGluTest, Bf16ActivationRoundsTheActivationToNearestEven) {
  // hidden 1, inter 1, one expert: act = silu(1) · 1 = 0.7310586, down = 1.
  const uint16_t x[] = {kOne};
  const int64_t offsets[] = {0, 1};
  const uint16_t w[] = {kOne};
  float f32_out, bf16_out;
  GroupedSwiGlu({.x = x,
                 .offsets = offsets,
                 .experts = 1,
                 .rows = 1,
                 .hidden = 1,
                 .inter = 1,
                 .gate = w,
                 .up = w,
                 .down = w,
                 .out = &f32_out});
  GroupedSwiGlu({.x = x,
                 .offsets = offsets,
                 .experts = 1,
                 .rows = 1,
                 .hidden = 1,
                 .inter = 1,
                 .gate = w,
                 .up = w,
                 .down = w,
                 .out = &bf16_out,
                 .bf16_activation = true});
  EXPECT_NEAR(f32_out, 0.7310586f, 1e-6);
  // bf16 has 8 significant bits: 0.7310586 lies between 0.73046875 and 0.734375 (steps of
  // 2^-8), nearer the first.
  EXPECT_EQ(bf16_out, 0.73046875f);
}

}  // namespace
}  // namespace semmoe::kernels::cpu
