// Links cuBLAS and NCCL through @local_cuda and asks each for its version, which works without
// a GPU; a broken wrapper fails here, in CI, not on the device machine.
#include <cublas_v2.h>
#include <nccl.h>

#include <string>

#include "gtest/gtest.h"

namespace {

TEST(CudaLibrariesTest, CublasReportsItsVersion) {
  int major = -1;
  ASSERT_EQ(cublasGetProperty(MAJOR_VERSION, &major), CUBLAS_STATUS_SUCCESS);
  EXPECT_GE(major, 12);
}

TEST(CudaLibrariesTest, NcclReportsItsVersion) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_GE(version, 2 * 10000);  // NCCL 2.x encodes as MAJOR*10000 + MINOR*100 + PATCH.
  EXPECT_NE(std::string(ncclGetErrorString(ncclInvalidArgument)).find("invalid argument"),
            std::string::npos);
}

}  // namespace
