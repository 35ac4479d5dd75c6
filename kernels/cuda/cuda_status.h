// CUDA runtime errors as absl::Status, converted in the first host frame that sees them.
//
//   CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
// returns e.g. INTERNAL "cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) failed at
// kernels/cuda/smoke.cc:42: cudaErrorIllegalAddress (an illegal memory access ...)".
#ifndef SEMMOE_KERNELS_CUDA_CUDA_STATUS_H_
#define SEMMOE_KERNELS_CUDA_CUDA_STATUS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/cuda/launch.h"

namespace semmoe::kernels::cuda {

// OK for cudaSuccess; otherwise a Status whose code reflects the error class
// (out of memory: RESOURCE_EXHAUSTED; no device or driver: UNAVAILABLE; bad argument:
// INVALID_ARGUMENT; anything else: INTERNAL) and whose message names `call`, file and line.
// `error`: a cudaError_t value (launch.h's CudaError).
absl::Status CudaStatus(CudaError error, const char* call, const char* file, int line);

// Number of CUDA devices; 0 where there is no device or no driver (the CPU machines' answer).
absl::StatusOr<int> DeviceCount();

}  // namespace semmoe::kernels::cuda

#define CUDA_RETURN_IF_ERROR(call)                                                              \
  do {                                                                                          \
    const ::semmoe::kernels::cuda::CudaError semmoe_cuda_error =                                \
        static_cast<::semmoe::kernels::cuda::CudaError>(call);                                  \
    if (semmoe_cuda_error != 0) { /* cudaSuccess */                                             \
      return ::semmoe::kernels::cuda::CudaStatus(semmoe_cuda_error, #call, __FILE__, __LINE__); \
    }                                                                                           \
  } while (false)

#endif  // SEMMOE_KERNELS_CUDA_CUDA_STATUS_H_
