// Runs everywhere (no `gpu` tag): the error mapping needs no device.
#include "kernels/cuda/cuda_status.h"

#include <cuda_runtime_api.h>

#include "gtest/gtest.h"

namespace semmoe::kernels::cuda {
namespace {

absl::Status FailingCall() {
  CUDA_RETURN_IF_ERROR(cudaErrorMemoryAllocation);
  return absl::OkStatus();
}

absl::Status SucceedingCall() {
  CUDA_RETURN_IF_ERROR(cudaSuccess);
  return absl::OkStatus();
}

TEST(CudaStatusTest, MacroReturnsStatusNamingCallFileAndLine) {
  EXPECT_TRUE(SucceedingCall().ok());
  const absl::Status status = FailingCall();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("cudaErrorMemoryAllocation failed at"), absl::string_view::npos)
      << status;
  EXPECT_NE(status.message().find("cuda_status_test.cc:"), absl::string_view::npos) << status;
}

TEST(CudaStatusTest, CodesFollowTheErrorClass) {
  EXPECT_EQ(CudaStatus(cudaErrorNoDevice, "f()", "x.cc", 1).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CudaStatus(cudaErrorInvalidValue, "f()", "x.cc", 1).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaStatus(cudaErrorIllegalAddress, "f()", "x.cc", 1).code(),
            absl::StatusCode::kInternal);
  EXPECT_TRUE(CudaStatus(cudaSuccess, "f()", "x.cc", 1).ok());
}

TEST(CudaStatusTest, DeviceCountAnswersWithOrWithoutAGpu) {
  absl::StatusOr<int> count = DeviceCount();
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_GE(*count, 0);
}

}  // namespace
}  // namespace semmoe::kernels::cuda
