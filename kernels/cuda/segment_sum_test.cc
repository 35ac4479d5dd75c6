#include "kernels/cuda/segment_sum.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/segment_sum.h"
#include "kernels/cuda/cuda_status.h"

namespace semmoe::kernels::cuda {
namespace {

TEST(SegmentSumTest, MatchesTheCpuReferenceBitForBit) {
  auto devices = DeviceCount();
  ASSERT_TRUE(devices.ok() && *devices > 0) << "needs a GPU";
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (int segments : {1, 2, 3, 8}) {
    for (int64_t n : {0, 1, 7, 256, 1000, 70001}) {
      std::vector<float> in(segments * n);
      for (float& v : in) v = normal(rng);
      if (!in.empty()) in[0] = NAN;  // NaN propagates the same way on both.
      std::vector<float> want(n), got(n, -1.0f);
      cpu::SegmentSum({.in = in.data(), .segments = segments, .n = n, .out = want.data()});
      float *d_in = nullptr, *d_out = nullptr;
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_in), in.size() * 4 + 4), cudaSuccess);
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_out), n * 4 + 4), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(d_in, in.data(), in.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(LaunchSegmentSum({d_in, segments, n, d_out}, nullptr), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(got.data(), d_out, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
      cudaFree(d_in);
      cudaFree(d_out);
      for (int64_t i = 0; i < n; ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << i;
        } else {
          ASSERT_EQ(got[i], want[i]) << "segments " << segments << " n " << n << " i " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace semmoe::kernels::cuda
