// The GPU grouped SwiGLU against kernels/cpu/grouped_swiglu on random shapes, with experts that
// get no rows and zero rows in all. Needs a GPU (tag gpu).
#include "kernels/cuda/grouped_swiglu.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/grouped_swiglu.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/testing/device_memory.h"
#include "kernels/dtype.h"

namespace semmoe::kernels::cuda {
namespace {

using testing::ToDevice;
using testing::ToHost;

TEST(GroupedSwiGluTest, MatchesTheCpu) {
  auto devices = DeviceCount();
  ASSERT_TRUE(devices.ok() && *devices > 0) << "needs a GPU";
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 0.1f);
  auto bf16 = [&](size_t n) {
    std::vector<uint16_t> v(n);
    for (uint16_t& b : v) b = F32ToBf16(normal(rng)).bits;
    return v;
  };
  for (int experts : {1, 4, 16}) {
    for (int64_t hidden : {8, 64, 256}) {
      for (int64_t inter : {16, 128}) {
        for (int64_t rows_wanted : {0, 1, 50, 400}) {
          // Rows spread over the first half of the experts; the rest get none.
          std::vector<int64_t> offsets(experts + 1, 0);
          for (int64_t r = 0; r < rows_wanted; ++r) ++offsets[1 + rng() % std::max(1, experts / 2)];
          for (int e = 0; e < experts; ++e) offsets[e + 1] += offsets[e];
          const int64_t rows = offsets[experts];
          const std::vector<uint16_t> x = bf16(rows * hidden),
                                      gate = bf16(experts * inter * hidden),
                                      up = bf16(experts * inter * hidden),
                                      down = bf16(experts * hidden * inter);
          std::vector<float> want(rows * hidden);
          cpu::GroupedSwiGlu({x.data(), offsets.data(), experts, hidden, inter, gate.data(),
                              up.data(), down.data(), want.data()});
          uint16_t *d_x = ToDevice(x), *d_g = ToDevice(gate), *d_u = ToDevice(up),
                   *d_d = ToDevice(down);
          int64_t* d_off = ToDevice(offsets);
          float* d_act = ToDevice(std::vector<float>(rows * inter));
          float* d_out = ToDevice(std::vector<float>(rows * hidden));
          ASSERT_EQ(
              LaunchGroupedSwiGlu(
                  {d_x, d_off, experts, rows, hidden, inter, d_g, d_u, d_d, d_act, d_out}, nullptr),
              cudaSuccess);
          std::vector<float> got(rows * hidden);
          if (!got.empty()) {
            ASSERT_EQ(cudaMemcpy(got.data(), d_out, 4 * got.size(), cudaMemcpyDeviceToHost),
                      cudaSuccess);
          }
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 1e-4f * std::max(1e-2f, std::abs(want[i])))
                << "experts " << experts << " hidden " << hidden << " inter " << inter << " i "
                << i;
          }
          for (void* p : {static_cast<void*>(d_x), static_cast<void*>(d_g), static_cast<void*>(d_u),
                          static_cast<void*>(d_d), static_cast<void*>(d_off),
                          static_cast<void*>(d_act), static_cast<void*>(d_out)}) {
            cudaFree(p);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace semmoe::kernels::cuda
