#include "kernels/cuda/cuda_status.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"

namespace semmoe::kernels::cuda {

absl::Status CudaStatus(CudaError code, const char* call, const char* file, int line) {
  const cudaError_t error = static_cast<cudaError_t>(code);
  if (error == cudaSuccess) return absl::OkStatus();
  const std::string message =
      absl::StrCat(call, " failed at ", file, ":", line, ": ", cudaGetErrorName(error), " (",
                   cudaGetErrorString(error), ")");
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(message);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      return absl::UnavailableError(message);
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidConfiguration:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::StatusOr<int> DeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver) {
    cudaGetLastError();  // Clear the sticky-free error so later calls start clean.
    return 0;
  }
  if (error != cudaSuccess)
    return CudaStatus(error, "cudaGetDeviceCount(&count)", __FILE__, __LINE__);
  return count;
}

}  // namespace semmoe::kernels::cuda
