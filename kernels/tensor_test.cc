#include "kernels/tensor.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::kernels {
namespace {

using ::testing::ElementsAre;

Tensor Iota(std::vector<int64_t> shape) {
  Tensor t = *Tensor::Zeros(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

float At(const Tensor& t, std::vector<int64_t> index) { return t.data<float>()[*t.Offset(index)]; }

TEST(TensorTest, DefaultIsEmpty) {
  Tensor t;
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.nbytes(), 0u);
  EXPECT_FALSE(t.owns_data());
}

TEST(TensorTest, ZerosOwnsAlignedZeroedContiguousMemory) {
  absl::StatusOr<Tensor> t = Tensor::Zeros(DType::kBF16, {2, 3, 4});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->rank(), 3);
  EXPECT_THAT(t->shape(), ElementsAre(2, 3, 4));
  EXPECT_THAT(t->strides(), ElementsAre(12, 4, 1));
  EXPECT_EQ(t->numel(), 24);
  EXPECT_EQ(t->nbytes(), 48u);
  EXPECT_TRUE(t->is_contiguous());
  EXPECT_TRUE(t->owns_data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % 64, 0u);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(t->data<BF16>()[i].bits, 0);
  EXPECT_EQ(t->DebugString(), "BF16[2, 3, 4]");
}

TEST(TensorTest, ZerosRejectsBadShapes) {
  EXPECT_EQ(Tensor::Zeros(DType::kF32, {2, -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::Zeros(DType::kF32, {1LL << 40, 1LL << 40}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Tensor> empty = Tensor::Zeros(DType::kF32, {0, 5});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->numel(), 0);
  absl::StatusOr<Tensor> scalar = Tensor::Zeros(DType::kI32, {});
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->numel(), 1);
}

TEST(TensorTest, CopiesShareStorageAndOutliveTheOriginal) {
  Tensor view;
  {
    Tensor t = Iota({4, 4});
    view = *t.Slice(0, 2, 4);
  }
  EXPECT_TRUE(view.owns_data());
  EXPECT_EQ(At(view, {0, 0}), 8.0f);
  EXPECT_EQ(At(view, {1, 3}), 15.0f);
}

TEST(TensorTest, WrapViewsCallerMemoryWithinItsCapacity) {
  std::vector<int32_t> buffer(12);
  for (int i = 0; i < 12; ++i) buffer[i] = i;
  absl::StatusOr<Tensor> t = Tensor::Wrap(DType::kI32, {3, 4}, buffer.data(), 48);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE(t->owns_data());
  t->data<int32_t>()[5] = 100;
  EXPECT_EQ(buffer[5], 100);

  // Every-other-column view with explicit strides.
  absl::StatusOr<Tensor> strided = Tensor::Wrap(DType::kI32, {3, 2}, buffer.data(), 48, {4, 2});
  ASSERT_TRUE(strided.ok()) << strided.status();
  EXPECT_FALSE(strided->is_contiguous());
  EXPECT_EQ(strided->data<int32_t>()[*strided->Offset({2, 1})], 10);

  EXPECT_EQ(Tensor::Wrap(DType::kI32, {3, 4}, buffer.data(), 47).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Tensor::Wrap(DType::kI32, {3, 4}, buffer.data(), 48, {4}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::Wrap(DType::kI32, {3, 4}, buffer.data(), 48, {-4, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::Wrap(DType::kI32, {3, 4}, nullptr, 48).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      Tensor::Wrap(DType::kI32, {3, 4}, buffer.data(), 48, {INT64_MAX / 2, 1}).status().code(),
      absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(Tensor::Wrap(DType::kI32, {0, 4}, nullptr, 0).ok());
}

TEST(TensorTest, OffsetChecksEveryCoordinate) {
  Tensor t = Iota({2, 3});
  EXPECT_EQ(*t.Offset({1, 2}), 5);
  EXPECT_EQ(t.Offset({2, 0}).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(t.Offset({0, -1}).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(t.Offset({0}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorTest, SliceTransposeReshapeAreViews) {
  Tensor t = Iota({3, 4});
  Tensor cols = *t.Slice(1, 1, 3);
  EXPECT_THAT(cols.shape(), ElementsAre(3, 2));
  EXPECT_FALSE(cols.is_contiguous());
  EXPECT_EQ(At(cols, {2, 1}), 10.0f);

  Tensor tt = *t.Transpose(0, 1);
  EXPECT_THAT(tt.shape(), ElementsAre(4, 3));
  EXPECT_THAT(tt.strides(), ElementsAre(1, 4));
  EXPECT_EQ(At(tt, {3, 2}), 11.0f);
  EXPECT_EQ(tt.raw_data(), t.raw_data());

  Tensor flat = *t.Reshape({12});
  EXPECT_EQ(flat.raw_data(), t.raw_data());
  EXPECT_EQ(t.Reshape({5}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tt.Reshape({12}).status().code(), absl::StatusCode::kFailedPrecondition);

  EXPECT_EQ(t.Slice(2, 0, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Slice(0, 2, 4).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(t.Slice(0, 2, 1).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(t.Transpose(0, 2).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorTest, CloneMakesContiguousIndependentCopies) {
  Tensor t = Iota({3, 4});
  Tensor tt = *t.Transpose(0, 1);
  Tensor copy = tt.Clone();
  EXPECT_TRUE(copy.is_contiguous());
  EXPECT_NE(copy.raw_data(), t.raw_data());
  EXPECT_THAT(std::vector<float>(copy.data<float>(), copy.data<float>() + 4),
              ElementsAre(0, 4, 8, 1));
  t.data<float>()[0] = 42;
  EXPECT_EQ(copy.data<float>()[0], 0.0f);
}

TEST(TensorTest, ConvertsBetweenFloatTypes) {
  Tensor t = *Tensor::Zeros(DType::kF32, {2, 2});
  const float values[] = {1.0f, -2.5f, 1.0f / 3.0f, 65504.0f};
  for (int i = 0; i < 4; ++i) t.data<float>()[i] = values[i];

  Tensor bf = *ConvertTo(t, DType::kBF16);
  Tensor half = *ConvertTo(*t.Transpose(0, 1), DType::kF16);
  EXPECT_EQ(bf.data<BF16>()[2].bits, F32ToBf16(1.0f / 3.0f).bits);
  EXPECT_EQ(half.data<F16>()[1].bits, F32ToF16(1.0f / 3.0f).bits);  // Transposed order.
  EXPECT_EQ(half.data<F16>()[3].bits, 0x7BFF);

  Tensor back = *ConvertTo(bf, DType::kF32);
  EXPECT_EQ(back.data<float>()[1], -2.5f);
  EXPECT_NEAR(back.data<float>()[2], 1.0f / 3.0f, 1.0f / 256);

  Tensor ints = *Tensor::Zeros(DType::kI32, {2});
  EXPECT_EQ(ConvertTo(ints, DType::kF32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ConvertTo(t, DType::kI32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ConvertTo(ints, DType::kI32).ok());
}

TEST(TensorDeathTest, ReadingAsTheWrongTypeIsAProgrammingError) {
  Tensor t = *Tensor::Zeros(DType::kBF16, {2});
  EXPECT_DEATH(t.data<float>(), "BF16 read as F32");
}

}  // namespace
}  // namespace semmoe::kernels
