#include "kernels/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace semmoe::kernels {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(DTypeSize(DType::kF32), 4u);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kI32), 4u);
  EXPECT_EQ(DTypeSize(DType::kF8E4M3), 1u);
  EXPECT_EQ(DTypeName(DType::kF8E4M3), "F8_E4M3");
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16, DType::kI32, DType::kF8E4M3}) {
    absl::StatusOr<DType> parsed = ParseDType(DTypeName(d));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, d);
  }
  EXPECT_EQ(ParseDType("F64").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDType("bf16").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDType("").status().code(), absl::StatusCode::kInvalidArgument);
}

// The OCP 8-bit float spec (v1.0), E4M3: a code s.eeee.mmm is (-1)^s · 2^(e-7) · (1 + m/8) for
// e > 0, (-1)^s · 2^-6 · m/8 for e = 0, and NaN for e = 15, m = 7 (no infinities).
double E4m3FromSpec(int code) {
  const int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double magnitude = e == 0 ? std::pow(2.0, -6) * (m / 8.0) : std::pow(2.0, e - 7) * (1 + m / 8.0);
  return s ? -magnitude : magnitude;
}

TEST(F8E4M3Test, EveryCodeDecodesAsTheSpecDefinesIt) {
  int nans = 0;
  for (int code = 0; code < 256; ++code) {
    const float got = F8E4M3ToF32(F8E4M3{static_cast<uint8_t>(code)});
    const double want = E4m3FromSpec(code);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << code;
      EXPECT_EQ(std::signbit(got), code >= 128) << code;
      ++nans;
      continue;
    }
    EXPECT_EQ(static_cast<double>(got), want) << "code 0x" << std::hex << code;
    EXPECT_EQ(std::signbit(got), code >= 128) << code;  // -0 included.
  }
  EXPECT_EQ(nans, 2);
  // Landmarks: the largest finite value, one, the smallest normal and subnormal.
  EXPECT_EQ(F8E4M3ToF32(F8E4M3{0x7E}), 448.0f);
  EXPECT_EQ(F8E4M3ToF32(F8E4M3{0xFE}), -448.0f);
  EXPECT_EQ(F8E4M3ToF32(F8E4M3{0x38}), 1.0f);
  EXPECT_EQ(F8E4M3ToF32(F8E4M3{0x08}), 0.015625f);
  EXPECT_EQ(F8E4M3ToF32(F8E4M3{0x01}), 0.001953125f);
}

TEST(F8E4M3Test, EncodingRoundsToNearestEvenAndSaturates) {
  for (int code = 0; code < 256; ++code) {  // Every finite code round-trips, -0 included.
    const F8E4M3 in{static_cast<uint8_t>(code)};
    if (std::isnan(F8E4M3ToF32(in))) continue;
    EXPECT_EQ(F32ToF8E4M3(F8E4M3ToF32(in)).bits, in.bits) << code;
  }
  EXPECT_EQ(F32ToF8E4M3(1.0625f).bits, 0x38);   // Halfway 1 / 1.125: the even code.
  EXPECT_EQ(F32ToF8E4M3(1.1875f).bits, 0x3A);   // Halfway 1.125 / 1.25: the even code.
  EXPECT_EQ(F32ToF8E4M3(1.07f).bits, 0x39);     // Nearer 1.125.
  EXPECT_EQ(F32ToF8E4M3(-1.07f).bits, 0xB9);
  EXPECT_EQ(F32ToF8E4M3(0.0009765625f).bits, 0x00);  // Half the smallest subnormal: to zero.
  EXPECT_EQ(F32ToF8E4M3(0.001f).bits, 0x01);
  EXPECT_EQ(F32ToF8E4M3(440.0f).bits, 0x7E);  // Nearer 448 than 416.
  EXPECT_EQ(F32ToF8E4M3(1000.0f).bits, 0x7E);  // Saturates (no infinities).
  EXPECT_EQ(F32ToF8E4M3(-std::numeric_limits<float>::infinity()).bits, 0xFE);
  EXPECT_TRUE(std::isnan(F8E4M3ToF32(F32ToF8E4M3(std::numeric_limits<float>::quiet_NaN()))));
}

// Every 16-bit pattern survives a trip through f32 (NaNs stay NaN with their sign).
TEST(Bf16Test, EveryPatternRoundTripsThroughF32) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const BF16 in{static_cast<uint16_t>(b)};
    const float f = Bf16ToF32(in);
    const BF16 out = F32ToBf16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Bf16ToF32(out))) << b;
      EXPECT_EQ(out.bits & 0x8000, b & 0x8000) << b;
    } else {
      EXPECT_EQ(out.bits, b) << b;
    }
  }
}

// Reference: pick the nearer of the two bf16 neighbours in double precision, ties to even.
uint16_t ReferenceBf16(float f) {
  const uint32_t bits = Bits(f);
  const uint16_t lo = static_cast<uint16_t>(bits >> 16);
  const uint16_t hi = static_cast<uint16_t>(lo + 1);
  const double x = f;
  const double dlo = std::fabs(x - static_cast<double>(FromBits(static_cast<uint32_t>(lo) << 16)));
  const double hi_value = static_cast<double>(FromBits(static_cast<uint32_t>(hi) << 16));
  // Past the largest finite bf16, IEEE rounds as if the next value were 2^128.
  const double dhi =
      std::isinf(hi_value) ? std::ldexp(1.0, 128) - std::fabs(x) : std::fabs(x - hi_value);
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return (lo & 1) ? hi : lo;
}

TEST(Bf16Test, RoundsToNearestEvenLikeAReference) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any_bits;
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    const float f = FromBits(any_bits(rng));
    if (std::isnan(f) || std::isinf(f)) continue;
    ASSERT_EQ(F32ToBf16(f).bits, ReferenceBf16(f)) << f;
    ++checked;
  }
  EXPECT_GT(checked, 190000);
  // Hand-picked ties: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 (even: 1).
  EXPECT_EQ(F32ToBf16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3F80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6 (even: 1 + 2^-6).
  EXPECT_EQ(F32ToBf16(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3F82);
  EXPECT_EQ(F32ToBf16(std::numeric_limits<float>::infinity()).bits, 0x7F80);
  EXPECT_EQ(F32ToBf16(-std::numeric_limits<float>::infinity()).bits, 0xFF80);
  EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(std::nanf("")))));
  // A signalling NaN whose payload lives only in the dropped bits must not become infinity.
  EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(FromBits(0x7F800001u)))));
  // The largest finite f32 rounds up to infinity, as IEEE rounding does.
  EXPECT_EQ(F32ToBf16(std::numeric_limits<float>::max()).bits, 0x7F80);
}

TEST(F16Test, EveryPatternRoundTripsThroughF32) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const F16 in{static_cast<uint16_t>(b)};
    const float f = F16ToF32(in);
    const F16 out = F32ToF16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(F16ToF32(out))) << b;
      EXPECT_EQ(out.bits & 0x8000, b & 0x8000) << b;
    } else {
      EXPECT_EQ(out.bits, b) << b;
    }
  }
}

TEST(F16Test, DecodesKnownValues) {
  EXPECT_EQ(F16ToF32(F16{0x3C00}), 1.0f);
  EXPECT_EQ(F16ToF32(F16{0xC000}), -2.0f);
  EXPECT_EQ(F16ToF32(F16{0x7BFF}), 65504.0f);
  EXPECT_EQ(F16ToF32(F16{0x0001}), std::ldexp(1.0f, -24));  // Smallest subnormal.
  EXPECT_EQ(F16ToF32(F16{0x0400}), std::ldexp(1.0f, -14));  // Smallest normal.
  EXPECT_TRUE(std::signbit(F16ToF32(F16{0x8000})));
  EXPECT_TRUE(std::isinf(F16ToF32(F16{0x7C00})));
  EXPECT_TRUE(std::isnan(F16ToF32(F16{0x7E00})));
}

// GCC's _Float16 (x86-64, GCC >= 12) converts with IEEE round-to-nearest-even: an independent
// reference for every region (normal, subnormal, overflow, ties).
TEST(F16Test, RoundsLikeTheCompilersFloat16) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> any_bits;
  // Bias towards the interesting range of exponents around f16's.
  std::uniform_int_distribution<uint32_t> exponent(100, 145);
  for (int i = 0; i < 400000; ++i) {
    uint32_t bits = any_bits(rng);
    if (i % 2 == 0) bits = (bits & 0x807FFFFFu) | (exponent(rng) << 23);
    if (i % 7 == 0) bits &= 0xFFFFF000u;  // Land on and near ties.
    const float f = FromBits(bits);
    if (std::isnan(f)) continue;
    const _Float16 reference = static_cast<_Float16>(f);
    uint16_t reference_bits;
    std::memcpy(&reference_bits, &reference, 2);
    ASSERT_EQ(F32ToF16(f).bits, reference_bits) << "f32 bits 0x" << std::hex << bits;
  }
  EXPECT_EQ(F32ToF16(65519.0f).bits, 0x7BFF);
  EXPECT_EQ(F32ToF16(65520.0f).bits, 0x7C00);
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -25)).bits, 0x0000);  // Tie between 0 and 2^-24: even.
  EXPECT_EQ(F32ToF16(std::ldexp(1.5f, -25)).bits, 0x0001);
  EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(FromBits(0x7F800001u)))));
}

}  // namespace
}  // namespace semmoe::kernels
