#include "kernels/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace semmoe::kernels {
namespace {

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float BitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kBF16:
    case DType::kF16:
      return 2;
    case DType::kF8E4M3:
      return 1;
  }
  return 0;  // Unreachable: the switch covers every enumerator.
}

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kBF16:
      return "BF16";
    case DType::kF16:
      return "F16";
    case DType::kI32:
      return "I32";
    case DType::kF8E4M3:
      return "F8_E4M3";
  }
  return "?";
}

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kI32, DType::kF8E4M3}) {
    if (name == DTypeName(dtype)) return dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dtype \"", name, "\" (expected F32, BF16, F16, I32 or F8_E4M3)"));
}

float Bf16ToF32(BF16 value) { return BitsFloat(static_cast<uint32_t>(value.bits) << 16); }

BF16 F32ToBf16(float value) {
  const uint32_t bits = FloatBits(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {  // NaN: keep sign and top payload, force quiet.
    return BF16{static_cast<uint16_t>((bits >> 16) | 0x0040u)};
  }
  // Round to nearest even on the 16 dropped bits; a carry correctly bumps the exponent (and
  // turns the largest finite values into infinity, as IEEE rounding does).
  const uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return BF16{static_cast<uint16_t>((bits + rounding) >> 16)};
}

float F16ToF32(F16 value) {
  const uint32_t h = value.bits;
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in f32.
    const float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return BitsFloat(sign | FloatBits(magnitude));
  }
  if (exponent == 31) return BitsFloat(sign | 0x7F800000u | (mantissa << 13));  // Inf / NaN.
  return BitsFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

F16 F32ToF16(float value) {
  uint32_t x = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x >= 0x7F800000u) {  // Inf or NaN (NaN: keep the top payload bits, force quiet).
    const uint16_t nan_bits = x > 0x7F800000u ? (0x200u | ((x >> 13) & 0x3FFu)) : 0u;
    return F16{static_cast<uint16_t>(sign | 0x7C00u | nan_bits)};
  }
  if (x >= 0x477FF000u) return F16{static_cast<uint16_t>(sign | 0x7C00u)};  // >= 65520: Inf.
  if (x < 0x38800000u) {                    // Below 2^-14: an f16 subnormal or zero.
    if (x < 0x33000000u) return F16{sign};  // Below 2^-25: rounds to zero.
    const uint32_t mantissa = (x & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - (x >> 23);  // 14..24: value / 2^-24 = mantissa >> shift.
    uint32_t q = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (q & 1u))) ++q;  // May reach 0x400: the smallest normal.
    return F16{static_cast<uint16_t>(sign | q)};
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits.
  uint32_t h = (x - 0x38000000u) >> 13;
  const uint32_t rest = x & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return F16{static_cast<uint16_t>(sign | h)};
}

float F8E4M3ToF32(F8E4M3 value) {
  const uint32_t b = value.bits;
  const float sign = (b & 0x80u) ? -1.0f : 1.0f;
  const int exponent = static_cast<int>((b >> 3) & 0xFu);
  const int mantissa = static_cast<int>(b & 0x7u);
  if (exponent == 0xF && mantissa == 0x7) {
    return std::copysign(std::numeric_limits<float>::quiet_NaN(), sign);
  }
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);  // m/8 · 2^-6.
  return sign * std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);    // 1.m · 2^(e-7).
}

F8E4M3 F32ToF8E4M3(float value) {
  const uint8_t sign = std::signbit(value) ? 0x80u : 0u;
  if (std::isnan(value)) return F8E4M3{static_cast<uint8_t>(sign | 0x7Fu)};
  const double x = std::fabs(static_cast<double>(value));
  // Codes 0x00-0x7E are the finite magnitudes in increasing order: the largest at or below x,
  // then the nearer of it and the next (the even code on a tie). Exact: both are dyadic.
  auto magnitude = [](int code) { return static_cast<double>(F8E4M3ToF32(F8E4M3{uint8_t(code)})); };
  if (x >= magnitude(0x7E)) return F8E4M3{static_cast<uint8_t>(sign | 0x7Eu)};  // Saturates.
  int lo = 0, hi = 0x7E;  // magnitude(lo) <= x < magnitude(hi)
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (magnitude(mid) <= x ? lo : hi) = mid;
  }
  const double below = x - magnitude(lo), above = magnitude(hi) - x;
  const int code = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
  return F8E4M3{static_cast<uint8_t>(sign | code)};
}

}  // namespace semmoe::kernels
