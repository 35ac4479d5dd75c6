// Tensor: a typed, strided, n-dimensional array in host memory.
//
// A Tensor either owns its storage (Zeros, Clone, ConvertTo: 64-byte aligned, shared between
// copies and the views made from them, freed with the last one) or views memory it does not own
// (Wrap: the caller keeps that memory alive and in place). Copying a Tensor is cheap and never
// copies elements; Clone() does. Shapes and strides are in elements, row-major by default.
//
// Thread-safety: a Tensor is a value; concurrent reads are safe, writes to shared storage need
// the caller's synchronisation.
#ifndef SEMMOE_KERNELS_TENSOR_H_
#define SEMMOE_KERNELS_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "glog/logging.h"
#include "kernels/dtype.h"

namespace semmoe::kernels {

class Tensor {
 public:
  // An empty f32 tensor of shape [0] with no storage.
  Tensor();

  // A new owning, contiguous tensor filled with zero bits. Negative dimensions or a size that
  // overflows are InvalidArgument.
  static absl::StatusOr<Tensor> Zeros(DType dtype, std::vector<int64_t> shape);

  // A view of `capacity_bytes` bytes at `data` (not owned). `strides` in elements; empty means
  // row-major contiguous. Every element the shape and strides can address must lie inside the
  // capacity (else OutOfRange); negative strides are InvalidArgument.
  static absl::StatusOr<Tensor> Wrap(DType dtype, std::vector<int64_t> shape, void* data,
                                     size_t capacity_bytes, std::vector<int64_t> strides = {});

  DType dtype() const { return dtype_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  absl::Span<const int64_t> shape() const { return shape_; }
  absl::Span<const int64_t> strides() const { return strides_; }
  // REQUIRES: 0 <= axis < rank().
  int64_t dim(int axis) const { return shape_[axis]; }
  int64_t numel() const { return numel_; }
  // Bytes the elements take when contiguous: numel() * DTypeSize(dtype()).
  size_t nbytes() const { return static_cast<size_t>(numel_) * DTypeSize(dtype_); }
  bool is_contiguous() const;
  bool owns_data() const { return storage_ != nullptr; }

  // The first element. REQUIRES: T matches dtype() (a programming error otherwise: CHECKed).
  template <typename T>
  T* data() const {
    CHECK(DTypeOf<T>::value == dtype_)
        << "Tensor of " << DTypeName(dtype_) << " read as " << DTypeName(DTypeOf<T>::value);
    return static_cast<T*>(data_);
  }
  void* raw_data() const { return data_; }

  // Element offset (in elements from data()) of `index`; OutOfRange if any coordinate is.
  absl::StatusOr<int64_t> Offset(absl::Span<const int64_t> index) const;

  // Views sharing this tensor's storage.
  // Rows [start, stop) of `axis`.
  absl::StatusOr<Tensor> Slice(int axis, int64_t start, int64_t stop) const;
  // Axes `a` and `b` swapped (no data moves; the result is usually not contiguous).
  absl::StatusOr<Tensor> Transpose(int a, int b) const;
  // Same elements, new shape; REQUIRES contiguity (else FailedPrecondition) and equal numel.
  absl::StatusOr<Tensor> Reshape(std::vector<int64_t> shape) const;

  // A new owning, contiguous copy.
  Tensor Clone() const;

  // "BF16[2, 3]" — for error messages.
  std::string DebugString() const;

 private:
  Tensor(DType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides, void* data,
         std::shared_ptr<void> storage);

  DType dtype_;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  int64_t numel_;
  void* data_;
  std::shared_ptr<void> storage_;  // Null for a view of memory owned elsewhere.
};

// Row-major contiguous strides for `shape`.
std::vector<int64_t> ContiguousStrides(absl::Span<const int64_t> shape);

// A new owning, contiguous tensor of `dtype` holding `src`'s values. Between F32, BF16 and F16
// values are converted (rounding as in dtype.h); I32 converts only to I32 (else
// InvalidArgument).
absl::StatusOr<Tensor> ConvertTo(const Tensor& src, DType dtype);

}  // namespace semmoe::kernels

#endif  // SEMMOE_KERNELS_TENSOR_H_
