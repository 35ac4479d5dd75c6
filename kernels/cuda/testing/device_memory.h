// Host ↔ device copies for the GPU kernel tests (failures are test failures, not crashes).
#ifndef SEMMOE_KERNELS_CUDA_TESTING_DEVICE_MEMORY_H_
#define SEMMOE_KERNELS_CUDA_TESTING_DEVICE_MEMORY_H_

#include <cuda_runtime_api.h>

#include <vector>

#include "gtest/gtest.h"

namespace semmoe::kernels::cuda::testing {

// A device copy of `host` (with slack, so empty vectors still get a valid pointer); cudaFree it.
template <typename T>
T* ToDevice(const std::vector<T>& host) {
  T* p = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), sizeof(T) * host.size() + 16), cudaSuccess);
  if (!host.empty()) {
    EXPECT_EQ(cudaMemcpy(p, host.data(), sizeof(T) * host.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  return p;
}

template <typename T>
std::vector<T> ToHost(const T* device, size_t n) {
  std::vector<T> out(n);
  if (n > 0) {
    EXPECT_EQ(cudaMemcpy(out.data(), device, sizeof(T) * n, cudaMemcpyDeviceToHost), cudaSuccess);
  }
  return out;
}

}  // namespace semmoe::kernels::cuda::testing

#endif  // SEMMOE_KERNELS_CUDA_TESTING_DEVICE_MEMORY_H_
