#include "kernels/tensor.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace semmoe::kernels {
namespace {

constexpr size_t kAlignment = 64;

absl::StatusOr<int64_t> CheckedNumel(absl::Span<const int64_t> shape) {
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("negative dimension in shape [", absl::StrJoin(shape, ", "), "]"));
    }
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() / 16 / d) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape [", absl::StrJoin(shape, ", "), "] is too large"));
    }
    numel *= d;
  }
  return numel;
}

std::shared_ptr<void> AllocateZeroed(size_t bytes) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* memory = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  // Allocation failure is not bad input; like operator new, it is fatal.
  CHECK(memory != nullptr) << "out of memory allocating " << bytes << " bytes";
  std::memset(memory, 0, rounded == 0 ? kAlignment : rounded);
  return std::shared_ptr<void>(memory, std::free);
}

// Calls `fn(element_offset)` for every element of `shape`/`strides`, in row-major order.
template <typename Fn>
void ForEachOffset(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides, Fn fn) {
  for (int64_t d : shape) {
    if (d == 0) return;
  }
  std::vector<int64_t> index(shape.size(), 0);
  int64_t offset = 0;
  while (true) {
    fn(offset);
    int axis = static_cast<int>(shape.size()) - 1;
    for (; axis >= 0; --axis) {
      if (++index[axis] < shape[axis]) {
        offset += strides[axis];
        break;
      }
      offset -= strides[axis] * (shape[axis] - 1);
      index[axis] = 0;
    }
    if (axis < 0) return;
  }
}

}  // namespace

std::vector<int64_t> ContiguousStrides(absl::Span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape[i + 1];
  }
  return strides;
}

Tensor::Tensor() : Tensor(DType::kF32, {0}, {1}, nullptr, nullptr) {}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides, void* data,
               std::shared_ptr<void> storage)
    : dtype_(dtype),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      numel_(1),
      data_(data),
      storage_(std::move(storage)) {
  for (int64_t d : shape_) numel_ *= d;
}

absl::StatusOr<Tensor> Tensor::Zeros(DType dtype, std::vector<int64_t> shape) {
  absl::StatusOr<int64_t> numel = CheckedNumel(shape);
  if (!numel.ok()) return numel.status();
  std::shared_ptr<void> storage = AllocateZeroed(*numel * DTypeSize(dtype));
  void* data = storage.get();
  std::vector<int64_t> strides = ContiguousStrides(shape);
  return Tensor(dtype, std::move(shape), std::move(strides), data, std::move(storage));
}

absl::StatusOr<Tensor> Tensor::Wrap(DType dtype, std::vector<int64_t> shape, void* data,
                                    size_t capacity_bytes, std::vector<int64_t> strides) {
  absl::StatusOr<int64_t> numel = CheckedNumel(shape);
  if (!numel.ok()) return numel.status();
  if (strides.empty()) strides = ContiguousStrides(shape);
  if (strides.size() != shape.size()) {
    return absl::InvalidArgumentError(absl::StrCat("shape has ", shape.size(), " axes but ",
                                                   strides.size(), " strides were given"));
  }
  if (*numel > 0 && data == nullptr) {
    return absl::InvalidArgumentError("null data for a non-empty tensor");
  }
  int64_t last = 0;  // Offset of the last addressable element.
  for (size_t i = 0; i < shape.size(); ++i) {
    if (strides[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("negative stride ", strides[i]));
    }
    if (shape[i] > 1) {
      const int64_t reach_limit = std::numeric_limits<int64_t>::max() / 16 - last;
      if (strides[i] > reach_limit / (shape[i] - 1)) {
        return absl::OutOfRangeError(absl::StrCat("stride ", strides[i], " of axis ", i,
                                                  " reaches past any addressable memory"));
      }
      last += strides[i] * (shape[i] - 1);
    }
  }
  const size_t needed = *numel == 0 ? 0 : static_cast<size_t>(last + 1) * DTypeSize(dtype);
  if (needed > capacity_bytes) {
    return absl::OutOfRangeError(absl::StrCat("a ", DTypeName(dtype), "[",
                                              absl::StrJoin(shape, ", "), "] view needs ", needed,
                                              " bytes but only ", capacity_bytes, " are given"));
  }
  return Tensor(dtype, std::move(shape), std::move(strides), data, nullptr);
}

bool Tensor::is_contiguous() const { return numel_ <= 1 || strides_ == ContiguousStrides(shape_); }

absl::StatusOr<int64_t> Tensor::Offset(absl::Span<const int64_t> index) const {
  if (static_cast<int>(index.size()) != rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("index has ", index.size(), " coordinates for a rank-", rank(), " tensor"));
  }
  int64_t offset = 0;
  for (int i = 0; i < rank(); ++i) {
    if (index[i] < 0 || index[i] >= shape_[i]) {
      return absl::OutOfRangeError(
          absl::StrCat("index ", index[i], " out of range for axis ", i, " of ", DebugString()));
    }
    offset += index[i] * strides_[i];
  }
  return offset;
}

absl::StatusOr<Tensor> Tensor::Slice(int axis, int64_t start, int64_t stop) const {
  if (axis < 0 || axis >= rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("slice axis ", axis, " out of range for ", DebugString()));
  }
  if (start < 0 || stop < start || stop > shape_[axis]) {
    return absl::OutOfRangeError(absl::StrCat("slice [", start, ", ", stop, ") of axis ", axis,
                                              " out of range for ", DebugString()));
  }
  std::vector<int64_t> shape = shape_;
  shape[axis] = stop - start;
  void* data = static_cast<char*>(data_) + start * strides_[axis] * DTypeSize(dtype_);
  return Tensor(dtype_, std::move(shape), strides_, data, storage_);
}

absl::StatusOr<Tensor> Tensor::Transpose(int a, int b) const {
  if (a < 0 || a >= rank() || b < 0 || b >= rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("transpose axes ", a, ", ", b, " out of range for ", DebugString()));
  }
  std::vector<int64_t> shape = shape_;
  std::vector<int64_t> strides = strides_;
  std::swap(shape[a], shape[b]);
  std::swap(strides[a], strides[b]);
  return Tensor(dtype_, std::move(shape), std::move(strides), data_, storage_);
}

absl::StatusOr<Tensor> Tensor::Reshape(std::vector<int64_t> shape) const {
  absl::StatusOr<int64_t> numel = CheckedNumel(shape);
  if (!numel.ok()) return numel.status();
  if (*numel != numel_) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot reshape ", DebugString(), " to [", absl::StrJoin(shape, ", "), "]"));
  }
  if (!is_contiguous()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot reshape non-contiguous ", DebugString(), "; Clone() it first"));
  }
  std::vector<int64_t> strides = ContiguousStrides(shape);
  return Tensor(dtype_, std::move(shape), std::move(strides), data_, storage_);
}

Tensor Tensor::Clone() const {
  absl::StatusOr<Tensor> copy = ConvertTo(*this, dtype_);
  // Invariant: converting to the same dtype cannot fail and the shape is already valid.
  CHECK(copy.ok()) << copy.status();
  return *std::move(copy);
}

std::string Tensor::DebugString() const {
  return absl::StrCat(DTypeName(dtype_), "[", absl::StrJoin(shape_, ", "), "]");
}

absl::StatusOr<Tensor> ConvertTo(const Tensor& src, DType dtype) {
  if ((src.dtype() == DType::kI32) != (dtype == DType::kI32)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot convert ", src.DebugString(), " to ", DTypeName(dtype)));
  }
  absl::StatusOr<Tensor> dst_or =
      Tensor::Zeros(dtype, std::vector<int64_t>(src.shape().begin(), src.shape().end()));
  if (!dst_or.ok()) return dst_or.status();
  Tensor dst = *std::move(dst_or);
  const size_t in_size = DTypeSize(src.dtype());
  const size_t out_size = DTypeSize(dtype);
  const char* in = static_cast<const char*>(src.raw_data());
  char* out = static_cast<char*>(dst.raw_data());

  auto read_f32 = [&](int64_t offset) -> float {
    const char* p = in + offset * in_size;
    switch (src.dtype()) {
      case DType::kBF16: {
        BF16 v;
        std::memcpy(&v.bits, p, 2);
        return Bf16ToF32(v);
      }
      case DType::kF16: {
        F16 v;
        std::memcpy(&v.bits, p, 2);
        return F16ToF32(v);
      }
      case DType::kF8E4M3:
        return F8E4M3ToF32(F8E4M3{static_cast<uint8_t>(*p)});
      default: {
        float v;
        std::memcpy(&v, p, 4);
        return v;
      }
    }
  };
  int64_t i = 0;
  ForEachOffset(src.shape(), src.strides(), [&](int64_t offset) {
    char* q = out + (i++) * out_size;
    if (src.dtype() == dtype) {
      std::memcpy(q, in + offset * in_size, in_size);
      return;
    }
    const float value = read_f32(offset);
    switch (dtype) {
      case DType::kBF16: {
        const BF16 v = F32ToBf16(value);
        std::memcpy(q, &v.bits, 2);
        break;
      }
      case DType::kF16: {
        const F16 v = F32ToF16(value);
        std::memcpy(q, &v.bits, 2);
        break;
      }
      case DType::kF8E4M3:
        *q = static_cast<char>(F32ToF8E4M3(value).bits);
        break;
      default:
        std::memcpy(q, &value, 4);
    }
  });
  return dst;
}

}  // namespace semmoe::kernels
