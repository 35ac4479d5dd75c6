// The GPU element/row ops against kernels/cpu/nn_ops on random shapes (including empty ones).
// Needs a GPU (tag gpu).
#include "kernels/cuda/nn_ops.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/testing/device_memory.h"
#include "kernels/cuda/testing/error_report.h"

namespace semmoe::kernels::cuda {
namespace {

using testing::ToDevice;
using testing::ToHost;

void ExpectNear(const char* kernel, const std::vector<float>& got, const std::vector<float>& want,
                float rel) {
  ASSERT_EQ(got.size(), want.size());
  testing::ErrorReport::Add(kernel, got, want);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], rel * std::max(1.0f, std::abs(want[i]))) << i;
  }
}

class NnOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto devices = DeviceCount();
    ASSERT_TRUE(devices.ok() && *devices > 0) << "needs a GPU";
  }
  std::mt19937 rng_{5};
  std::normal_distribution<float> normal_;
};

TEST_F(NnOpsTest, RmsNorm) {
  for (int64_t rows : {0, 1, 7, 300}) {
    for (int64_t width : {1, 64, 256, 4097}) {
      const int64_t stride = width + 3;  // Rows are not packed.
      std::vector<float> x(rows * stride), w(width);
      for (float& v : x) v = normal_(rng_);
      for (float& v : w) v = 1 + 0.1f * normal_(rng_);
      std::vector<float> want = x;
      cpu::RmsNorm({want.data(), rows, width, stride, w.data(), 1e-6f});
      float* d_x = ToDevice(x);
      float* d_w = ToDevice(w);
      ASSERT_EQ(LaunchRmsNorm({.x = d_x,
                               .rows = rows,
                               .width = width,
                               .row_stride = stride,
                               .weight = d_w,
                               .eps = 1e-6f},
                              nullptr),
                cudaSuccess);
      ExpectNear("rms_norm", ToHost(d_x, x.size()), want, 1e-5f);
      cudaFree(d_x);
      cudaFree(d_w);
    }
  }
}

TEST_F(NnOpsTest, QkNormRopeIsRmsNormPerHeadThenRope) {
  const int max_position = 512;
  for (int head_dim : {2, 64, 128}) {
    std::vector<float> cos(max_position * head_dim / 2), sin(cos.size());
    cpu::RopeTables(max_position, head_dim, 1e6, cos.data(), sin.data());
    for (int heads : {1, 4, 8}) {
      for (int64_t rows : {0, 1, 37}) {
        for (bool norm : {false, true}) {
          const int64_t stride = heads * head_dim;
          std::vector<float> x(rows * stride), w(head_dim);
          std::vector<int32_t> positions(rows);
          for (float& v : x) v = normal_(rng_);
          for (float& v : w) v = 1 + 0.1f * normal_(rng_);
          for (int32_t& p : positions) p = static_cast<int32_t>(rng_() % max_position);
          std::vector<float> want = x;
          if (norm) {
            for (int h = 0; h < heads; ++h) {
              cpu::RmsNorm({want.data() + h * head_dim, rows, head_dim, stride, w.data(), 1e-6f});
            }
          }
          cpu::ApplyRope({want.data(), rows, stride, heads, head_dim, positions.data(), cos.data(),
                          sin.data()});
          float* d_x = ToDevice(x);
          float* d_w = ToDevice(w);
          int32_t* d_pos = ToDevice(positions);
          float* d_cos = ToDevice(cos);
          float* d_sin = ToDevice(sin);
          ASSERT_EQ(LaunchQkNormRope({.x = d_x,
                                      .rows = rows,
                                      .row_stride = stride,
                                      .heads = heads,
                                      .head_dim = head_dim,
                                      .norm_weight = norm ? d_w : nullptr,
                                      .eps = 1e-6f,
                                      .positions = d_pos,
                                      .cos = d_cos,
                                      .sin = d_sin},
                                     nullptr),
                    cudaSuccess);
          ExpectNear("qk_norm_rope", ToHost(d_x, x.size()), want, 1e-5f);
          for (void* p :
               {static_cast<void*>(d_x), static_cast<void*>(d_w), static_cast<void*>(d_pos),
                static_cast<void*>(d_cos), static_cast<void*>(d_sin)}) {
            cudaFree(p);
          }
        }
      }
    }
  }
}

// MLA's rotary dims: q's heads [nope | rope] and the latent's one rotary key, both conventions.
TEST_F(NnOpsTest, PartialRopeMatchesTheCpu) {
  const int max_position = 300, rope_dim = 16, nope = 32;
  std::vector<float> cos(max_position * rope_dim / 2), sin(cos.size());
  cpu::RopeTables(max_position, rope_dim, 1e4, cos.data(), sin.data());
  for (int heads : {1, 8, 128}) {
    for (bool interleaved : {false, true}) {
      const int64_t rows = 37, head_stride = nope + rope_dim, stride = heads * head_stride;
      std::vector<float> x(rows * stride);
      std::vector<int32_t> positions(rows);
      for (float& v : x) v = normal_(rng_);
      for (int32_t& p : positions) p = static_cast<int32_t>(rng_() % max_position);
      kernels::PartialRopeArgs args{.rows = rows,
                                    .row_stride = stride,
                                    .heads = heads,
                                    .head_stride = head_stride,
                                    .rope_dim = rope_dim,
                                    .interleaved = interleaved};
      std::vector<float> want = x;
      kernels::PartialRopeArgs cpu_args = args;
      cpu_args.x = want.data() + nope;
      cpu_args.positions = positions.data();
      cpu_args.cos = cos.data();
      cpu_args.sin = sin.data();
      cpu::ApplyPartialRope(cpu_args);
      float* d_x = ToDevice(x);
      int32_t* d_pos = ToDevice(positions);
      float* d_cos = ToDevice(cos);
      float* d_sin = ToDevice(sin);
      args.x = d_x + nope;
      args.positions = d_pos;
      args.cos = d_cos;
      args.sin = d_sin;
      ASSERT_EQ(LaunchPartialRope(args, nullptr), cudaSuccess);
      ExpectNear("partial_rope", ToHost(d_x, x.size()), want, 1e-5f);
      for (void* p : {static_cast<void*>(d_x), static_cast<void*>(d_pos),
                      static_cast<void*>(d_cos), static_cast<void*>(d_sin)}) {
        cudaFree(p);
      }
    }
  }
}

TEST_F(NnOpsTest, SiluMul) {
  for (int64_t n : {0, 1, 1000, 100003}) {
    std::vector<float> gate(n), up(n);
    for (float& v : gate) v = 4 * normal_(rng_);
    for (float& v : up) v = normal_(rng_);
    std::vector<float> want = gate;
    cpu::SiluMul(want.data(), up.data(), n);
    float* d_gate = ToDevice(gate);
    float* d_up = ToDevice(up);
    ASSERT_EQ(LaunchSiluMul(d_gate, d_up, n, nullptr), cudaSuccess);
    ExpectNear("silu_mul", ToHost(d_gate, n), want, 1e-5f);
    cudaFree(d_gate);
    cudaFree(d_up);
  }
}

}  // namespace
}  // namespace semmoe::kernels::cuda
