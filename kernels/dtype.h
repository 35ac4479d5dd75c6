// Element types of tensors and the conversions between the 16-bit floats and f32.
//
// bf16 and f16 are stored as their bit patterns (BF16, F16) so that a tensor of one can never be
// read as the other by mistake. Conversions to 16 bits round to nearest, ties to even; NaN stays
// NaN (quiet) and keeps its sign; f32 values too large for f16 become infinity.
//
// F8_E4M3 is OCP FP8 E4M3 "fn" (PyTorch's float8_e4m3fn; the FP8 checkpoints of DeepSeek-V3 and
// Qwen3): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits; subnormals; no infinities; the one
// NaN pattern per sign is S.1111.111; the largest finite magnitude is 448. Conversion from f32
// rounds to nearest, ties to even, and saturates at ±448 (what the quantizers that write these
// checkpoints do: scale, clamp, cast); NaN stays NaN.
#ifndef SEMMOE_KERNELS_DTYPE_H_
#define SEMMOE_KERNELS_DTYPE_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmoe::kernels {

enum class DType : uint8_t { kF32, kBF16, kF16, kI32, kF8E4M3 };

struct BF16 {
  uint16_t bits = 0;
};
struct F16 {
  uint16_t bits = 0;
};
struct F8E4M3 {
  uint8_t bits = 0;
};

// Bytes per element.
size_t DTypeSize(DType dtype);

// "F32", "BF16", "F16", "I32", "F8_E4M3": the names safetensors uses.
absl::string_view DTypeName(DType dtype);

// Inverse of DTypeName (exact, upper case). Unknown names are InvalidArgument.
absl::StatusOr<DType> ParseDType(absl::string_view name);

// The DType of a C++ element type: DTypeOf<float>::value == DType::kF32.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kF32;
};
template <>
struct DTypeOf<BF16> {
  static constexpr DType value = DType::kBF16;
};
template <>
struct DTypeOf<F16> {
  static constexpr DType value = DType::kF16;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kI32;
};
template <>
struct DTypeOf<F8E4M3> {
  static constexpr DType value = DType::kF8E4M3;
};

float Bf16ToF32(BF16 value);
BF16 F32ToBf16(float value);
float F16ToF32(F16 value);
F16 F32ToF16(float value);
float F8E4M3ToF32(F8E4M3 value);
F8E4M3 F32ToF8E4M3(float value);

}  // namespace semmoe::kernels

#endif  // SEMMOE_KERNELS_DTYPE_H_
