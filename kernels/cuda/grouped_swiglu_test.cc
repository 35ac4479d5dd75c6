// The GPU grouped SwiGLU kernels against kernels/cpu/grouped_swiglu on random shapes (sizes that
// are not multiples of the tensor-core tile among them), with experts that get no rows and zero
// rows in all. Needs a GPU (tag gpu).
#include "kernels/cuda/grouped_swiglu.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/grouped_swiglu.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/testing/device_memory.h"
#include "kernels/cuda/testing/error_report.h"
#include "kernels/dtype.h"

namespace semmoe::kernels::cuda {
namespace {

using testing::ToDevice;
using testing::ToHost;

enum class Kernel { kDirect, kTensorCore };

class GroupedSwiGluTest : public ::testing::TestWithParam<Kernel> {
 protected:
  void SetUp() override {
    auto devices = DeviceCount();
    ASSERT_TRUE(devices.ok() && *devices > 0) << "needs a GPU";
  }
  std::vector<uint16_t> Bf16(size_t n) {
    std::vector<uint16_t> v(n);
    for (uint16_t& b : v) b = F32ToBf16(normal_(rng_)).bits;
    return v;
  }
  std::mt19937 rng_{7};
  std::normal_distribution<float> normal_{0, 0.1f};
};

TEST_P(GroupedSwiGluTest, MatchesTheCpu) {
  const bool tc = GetParam() == Kernel::kTensorCore;
  for (int experts : {1, 4, 16}) {
    for (int64_t hidden : {8, 64, 100, 256}) {
      for (int64_t inter : {16, 40, 128}) {
        for (int64_t rows_wanted : {0, 1, 50, 400}) {
          // Rows spread over the first half of the experts; the rest get none.
          std::vector<int64_t> offsets(experts + 1, 0);
          for (int64_t r = 0; r < rows_wanted; ++r)
            ++offsets[1 + rng_() % std::max(1, experts / 2)];
          for (int e = 0; e < experts; ++e) offsets[e + 1] += offsets[e];
          const int64_t rows = offsets[experts];
          const std::vector<uint16_t> x = Bf16(rows * hidden),
                                      gate = Bf16(experts * inter * hidden),
                                      up = Bf16(experts * inter * hidden),
                                      down = Bf16(experts * hidden * inter);
          std::vector<float> want(rows * hidden);
          cpu::GroupedSwiGlu({.x = x.data(),
                              .offsets = offsets.data(),
                              .experts = experts,
                              .rows = rows,
                              .hidden = hidden,
                              .inter = inter,
                              .gate = gate.data(),
                              .up = up.data(),
                              .down = down.data(),
                              .out = want.data(),
                              .bf16_activation = tc});
          uint16_t *d_x = ToDevice(x), *d_g = ToDevice(gate), *d_u = ToDevice(up),
                   *d_d = ToDevice(down);
          int64_t* d_off = ToDevice(offsets);
          float* d_act = ToDevice(std::vector<float>(rows * inter));
          float* d_out = ToDevice(std::vector<float>(rows * hidden, -7.0f));
          const GroupedSwiGluArgs args{.x = d_x,
                                       .offsets = d_off,
                                       .experts = experts,
                                       .rows = rows,
                                       .hidden = hidden,
                                       .inter = inter,
                                       .gate = d_g,
                                       .up = d_u,
                                       .down = d_d,
                                       .act = d_act,
                                       .out = d_out};
          ASSERT_EQ(tc ? LaunchGroupedSwiGluTensorCore(args, nullptr)
                       : LaunchGroupedSwiGlu(args, nullptr),
                    cudaSuccess);
          const std::vector<float> got = ToHost(d_out, want.size());
          testing::ErrorReport::Add(tc ? "grouped_swiglu tensor_core" : "grouped_swiglu direct",
                                    got, want);
          float scale = 1e-2f;
          for (float w : want) scale = std::max(scale, std::abs(w));
          for (size_t i = 0; i < got.size(); ++i) {
            // The direct kernel sums in the reference's order up to f32 rounding; the tensor-core
            // one in fragment order, and a bf16 rounding of the activation may land one step
            // apart when the f32 sums differ in their last bits.
            const float tolerance = tc ? 2e-3f * scale : 1e-4f * std::max(1e-2f, std::abs(want[i]));
            ASSERT_NEAR(got[i], want[i], tolerance) << "experts " << experts << " hidden " << hidden
                                                    << " inter " << inter << " i " << i;
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

INSTANTIATE_TEST_SUITE_P(Kernels, GroupedSwiGluTest,
                         ::testing::Values(Kernel::kDirect, Kernel::kTensorCore),
                         [](const ::testing::TestParamInfo<Kernel>& info) {
                           return info.param == Kernel::kDirect ? "Direct" : "TensorCore";
                         });

}  // namespace
}  // namespace semmoe::kernels::cuda
