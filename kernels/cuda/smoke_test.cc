// Tagged `gpu`: runs on the device machine (tests/gpu/run.sh), built everywhere.
#include "kernels/cuda/smoke.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace semmoe::kernels::cuda {
namespace {

TEST(SmokeTest, SaxpyOnTheGpuMatchesTheCpu) {
  const int n = (1 << 20) + 3;  // Not a multiple of the block size; more than one grid stride.
  std::vector<float> x(n), y(n), expected(n);
  for (int i = 0; i < n; ++i) {
    x[i] = 0.001f * static_cast<float>(i % 1000) - 0.5f;
    y[i] = static_cast<float>(i % 7);
    expected[i] = std::fma(2.5f, x[i], y[i]);
  }
  const absl::Status status = SaxpyOnDevice(2.5f, x, absl::MakeSpan(y));
  ASSERT_TRUE(status.ok()) << status;
  for (int i = 0; i < n; ++i) ASSERT_EQ(y[i], expected[i]) << "at " << i;
}

TEST(SmokeTest, MismatchedSizesAreAnError) {
  std::vector<float> x(4), y(5);
  EXPECT_EQ(SaxpyOnDevice(1.0f, x, absl::MakeSpan(y)).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace semmoe::kernels::cuda
