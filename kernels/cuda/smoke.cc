#include "kernels/cuda/smoke.h"

#include <cuda_runtime_api.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/smoke_kernels.h"

namespace semmoe::kernels::cuda {
namespace {

struct CudaFree {
  void operator()(float* p) const { cudaFree(p); }
};
using DeviceFloats = std::unique_ptr<float, CudaFree>;

absl::StatusOr<DeviceFloats> AllocateFloats(size_t n) {
  void* p = nullptr;
  CUDA_RETURN_IF_ERROR(cudaMalloc(&p, n * sizeof(float)));
  return DeviceFloats(static_cast<float*>(p));
}

}  // namespace

absl::Status SaxpyOnDevice(float a, absl::Span<const float> x, absl::Span<float> y) {
  if (x.size() != y.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("saxpy: x has ", x.size(), " elements but y has ", y.size()));
  }
  ASSIGN_OR_RETURN(const int devices, DeviceCount());
  if (devices == 0) return absl::UnavailableError("saxpy: no CUDA device on this machine");
  if (x.empty()) return absl::OkStatus();
  const size_t bytes = x.size() * sizeof(float);
  ASSIGN_OR_RETURN(DeviceFloats dx, AllocateFloats(x.size()));
  ASSIGN_OR_RETURN(DeviceFloats dy, AllocateFloats(y.size()));
  CUDA_RETURN_IF_ERROR(cudaMemcpy(dx.get(), x.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_RETURN_IF_ERROR(cudaMemcpy(dy.get(), y.data(), bytes, cudaMemcpyHostToDevice));
  const SaxpyArgs args{.a = a, .x = dx.get(), .y = dy.get(), .n = static_cast<int64_t>(x.size())};
  CUDA_RETURN_IF_ERROR(LaunchSaxpy(args, /*stream=*/nullptr));
  CUDA_RETURN_IF_ERROR(cudaMemcpy(y.data(), dy.get(), bytes, cudaMemcpyDeviceToHost));
  return absl::OkStatus();
}

}  // namespace semmoe::kernels::cuda
