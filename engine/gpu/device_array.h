// DeviceArray<T>: an owned, typed allocation in the current CUDA device's memory (cudaFree on
// destruction; movable, not copyable). Errors are absl::Status (kernels/cuda/cuda_status.h).
#ifndef SEMMOE_ENGINE_GPU_DEVICE_ARRAY_H_
#define SEMMOE_ENGINE_GPU_DEVICE_ARRAY_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "common/status_macros.h"
#include "kernels/cuda/cuda_status.h"

namespace semmoe::engine::gpu {

template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  ~DeviceArray() { Free(); }
  DeviceArray(DeviceArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    if (this != &other) {
      Free();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  // At least `n` elements; the contents are not kept when it grows (scratch buffers).
  absl::Status Reserve(int64_t n) {
    if (n <= size_) return absl::OkStatus();
    Free();
    void* p = nullptr;
    // One spare element: an empty array still has a valid pointer to hand to a kernel.
    CUDA_RETURN_IF_ERROR(cudaMalloc(&p, sizeof(T) * static_cast<size_t>(n + 1)));
    data_ = static_cast<T*>(p);
    size_ = n;
    return absl::OkStatus();
  }

  // Exactly the `n` values at `host` (synchronous).
  absl::Status Assign(const T* host, int64_t n) {
    RETURN_IF_ERROR(Reserve(n));
    if (n > 0) {
      CUDA_RETURN_IF_ERROR(
          cudaMemcpy(data_, host, sizeof(T) * static_cast<size_t>(n), cudaMemcpyHostToDevice));
    }
    return absl::OkStatus();
  }

  // Copies `n` values from `host` on `stream` (the host memory must stay valid until the stream
  // has run the copy). REQUIRES n <= size().
  absl::Status CopyFromHost(const T* host, int64_t n, cudaStream_t stream) {
    if (n <= 0) return absl::OkStatus();
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(data_, host, sizeof(T) * static_cast<size_t>(n),
                                         cudaMemcpyHostToDevice, stream));
    return absl::OkStatus();
  }

  T* data() const { return data_; }
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  void Free() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
  }

  T* data_ = nullptr;
  int64_t size_ = 0;
};

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_DEVICE_ARRAY_H_
