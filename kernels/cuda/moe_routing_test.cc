// The GPU routing kernels against their CPU references on random shapes, including empty and
// ragged ones (experts nobody chose, zero tokens). Needs a GPU (tag gpu).
#include "kernels/cuda/moe_routing.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/moe_routing.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/testing/error_report.h"

namespace semmoe::kernels::cuda {
namespace {

// A device copy of a host vector (freed with the object).
template <typename T>
class Device {
 public:
  explicit Device(const std::vector<T>& host) : n_(host.size()) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&ptr_), sizeof(T) * n_ + 16), cudaSuccess);
    if (n_ > 0) {
      EXPECT_EQ(cudaMemcpy(ptr_, host.data(), sizeof(T) * n_, cudaMemcpyHostToDevice), cudaSuccess);
    }
  }
  explicit Device(size_t n) : Device(std::vector<T>(n)) {}
  ~Device() { cudaFree(ptr_); }
  T* get() { return ptr_; }
  std::vector<T> Host() const {
    std::vector<T> out(n_);
    if (n_ > 0) {
      EXPECT_EQ(cudaMemcpy(out.data(), ptr_, sizeof(T) * n_, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return out;
  }

 private:
  T* ptr_ = nullptr;
  size_t n_;
};

void RequireGpu() {
  auto devices = DeviceCount();
  ASSERT_TRUE(devices.ok() && *devices > 0) << "needs a GPU";
}

TEST(MoeRoutingTest, GatingMatchesTheCpu) {
  RequireGpu();
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 2);
  for (int experts : {1, 4, 32, 60, 128, 1024}) {
    for (int k : {1, 2, 4, 8}) {
      if (k > experts) continue;
      for (int64_t tokens : {0, 1, 5, 300}) {
        for (bool renormalize : {false, true}) {
          std::vector<float> logits(tokens * experts);
          for (float& v : logits) v = normal(rng);
          std::vector<int32_t> want_ids(tokens * k);
          std::vector<float> want_w(tokens * k);
          cpu::RouterGating({.logits = logits.data(),
                             .tokens = tokens,
                             .experts = experts,
                             .k = k,
                             .renormalize = renormalize,
                             .ids = want_ids.data(),
                             .weights = want_w.data()});
          Device<float> d_logits(logits), d_w(tokens * k);
          Device<int32_t> d_ids(tokens * k);
          ASSERT_EQ(LaunchRouterGating({.logits = d_logits.get(),
                                        .tokens = tokens,
                                        .experts = experts,
                                        .k = k,
                                        .renormalize = renormalize,
                                        .ids = d_ids.get(),
                                        .weights = d_w.get()},
                                       nullptr),
                    cudaSuccess);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          const std::vector<int32_t> ids = d_ids.Host();
          const std::vector<float> w = d_w.Host();
          testing::ErrorReport::Add("router_gating weights", w, want_w);
          for (int64_t i = 0; i < tokens * k; ++i) {
            ASSERT_EQ(ids[i], want_ids[i]) << "experts " << experts << " k " << k << " i " << i;
            ASSERT_NEAR(w[i], want_w[i], 1e-5f * std::max(1.0f, std::abs(want_w[i])));
          }
        }
      }
    }
  }
  EXPECT_EQ(LaunchRouterGating({.tokens = 1, .experts = 2000, .k = 2}, nullptr),
            cudaErrorInvalidValue);
}

// DeepSeek's rules: sigmoid scores, a correction bias, group-limited choice by group max (V2) or
// top-two sum (V3), scaled weights.
TEST(MoeRoutingTest, GroupLimitedGatingMatchesTheCpu) {
  RequireGpu();
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0, 2);
  for (auto [experts, groups, topk_groups, k] :
       {std::tuple{32, 4, 2, 4}, std::tuple{256, 8, 4, 8}, std::tuple{160, 8, 3, 6}}) {
    for (GroupScore group_score : {GroupScore::kMax, GroupScore::kTopTwoSum}) {
      for (GateScoring scoring : {GateScoring::kSoftmax, GateScoring::kSigmoid}) {
        for (bool biased : {false, true}) {
          const int64_t tokens = 257;
          std::vector<float> logits(tokens * experts), bias(experts);
          for (float& v : logits) v = normal(rng);
          for (float& v : bias) v = 0.1f * normal(rng);
          RouterGatingArgs args{.tokens = tokens,
                                .experts = experts,
                                .k = k,
                                .renormalize = true,
                                .scoring = scoring,
                                .groups = groups,
                                .topk_groups = topk_groups,
                                .group_score = group_score,
                                .renormalize_epsilon = 1e-20f,
                                .scale = 2.5f};
          std::vector<int32_t> want_ids(tokens * k);
          std::vector<float> want_w(tokens * k);
          RouterGatingArgs cpu_args = args;
          cpu_args.logits = logits.data();
          cpu_args.bias = biased ? bias.data() : nullptr;
          cpu_args.ids = want_ids.data();
          cpu_args.weights = want_w.data();
          cpu::RouterGating(cpu_args);
          Device<float> d_logits(logits), d_bias(bias), d_w(tokens * k);
          Device<int32_t> d_ids(tokens * k);
          args.logits = d_logits.get();
          args.bias = biased ? d_bias.get() : nullptr;
          args.ids = d_ids.get();
          args.weights = d_w.get();
          ASSERT_EQ(LaunchRouterGating(args, nullptr), cudaSuccess);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          const std::vector<int32_t> ids = d_ids.Host();
          const std::vector<float> w = d_w.Host();
          testing::ErrorReport::Add("router_gating grouped weights", w, want_w);
          for (int64_t i = 0; i < tokens * k; ++i) {
            ASSERT_EQ(ids[i], want_ids[i]) << "experts " << experts << " i " << i;
            ASSERT_NEAR(w[i], want_w[i], 1e-5f * std::max(1.0f, std::abs(want_w[i])));
          }
        }
      }
    }
  }
  EXPECT_EQ(LaunchRouterGating({.tokens = 1, .experts = 66, .k = 2, .groups = 4}, nullptr),
            cudaErrorInvalidValue);  // 66 experts do not split into 4 groups.
}

TEST(MoeRoutingTest, PermuteGatherCombineMatchTheCpu) {
  RequireGpu();
  std::mt19937 rng(2);
  std::normal_distribution<float> normal;
  for (int experts : {1, 3, 64, 128}) {
    for (int k : {1, 2, 8}) {
      for (int64_t tokens : {0, 1, 33, 1000}) {
        for (int64_t hidden : {1, 64, 257}) {
          const int64_t entries = tokens * k;
          std::vector<int32_t> ids(entries);
          // Ragged: half of the experts are never chosen.
          for (int32_t& id : ids) id = static_cast<int32_t>(rng() % std::max(1, experts / 2));
          std::vector<int64_t> want_counts(experts), want_offsets(experts + 1), want_eop(entries),
              want_poe(entries);
          cpu::PermuteByExpert({.ids = ids.data(),
                                .entries = entries,
                                .experts = experts,
                                .counts = want_counts.data(),
                                .offsets = want_offsets.data(),
                                .entry_of_position = want_eop.data(),
                                .position_of_entry = want_poe.data()});
          Device<int32_t> d_ids(ids);
          Device<int64_t> counts(experts), offsets(experts + 1), eop(entries), poe(entries);
          ASSERT_EQ(LaunchPermuteByExpert({.ids = d_ids.get(),
                                           .entries = entries,
                                           .experts = experts,
                                           .counts = counts.get(),
                                           .offsets = offsets.get(),
                                           .entry_of_position = eop.get(),
                                           .position_of_entry = poe.get()},
                                          nullptr),
                    cudaSuccess);
          ASSERT_EQ(offsets.Host(), want_offsets);
          ASSERT_EQ(eop.Host(), want_eop);
          ASSERT_EQ(poe.Host(), want_poe);

          std::vector<float> x(tokens * hidden), weights(entries);
          for (float& v : x) v = normal(rng);
          for (float& v : weights) v = std::abs(normal(rng));
          std::vector<float> want_y(entries * hidden), want_out(tokens * hidden);
          cpu::GatherRows({.x = x.data(),
                           .entry_of_position = want_eop.data(),
                           .entries = entries,
                           .k = k,
                           .hidden = hidden,
                           .y = want_y.data()});
          Device<float> d_x(x), d_y(entries * hidden), d_w(weights), d_out(tokens * hidden);
          ASSERT_EQ(LaunchGatherRows({.x = d_x.get(),
                                      .entry_of_position = eop.get(),
                                      .entries = entries,
                                      .k = k,
                                      .hidden = hidden,
                                      .y = d_y.get()},
                                     nullptr),
                    cudaSuccess);
          ASSERT_EQ(d_y.Host(), want_y);  // A copy: exact.
          // Experts as the identity: combine weighs the gathered rows back.
          cpu::CombineRows({.y = want_y.data(),
                            .weights = weights.data(),
                            .position_of_entry = want_poe.data(),
                            .tokens = tokens,
                            .k = k,
                            .hidden = hidden,
                            .out = want_out.data()});
          ASSERT_EQ(LaunchCombineRows({.y = d_y.get(),
                                       .weights = d_w.get(),
                                       .position_of_entry = poe.get(),
                                       .tokens = tokens,
                                       .k = k,
                                       .hidden = hidden,
                                       .out = d_out.get()},
                                      nullptr),
                    cudaSuccess);
          const std::vector<float> out = d_out.Host();
          testing::ErrorReport::Add("combine_rows", out, want_out);
          for (size_t i = 0; i < out.size(); ++i) {
            ASSERT_NEAR(out[i], want_out[i], 1e-6f * std::max(1.0f, std::abs(want_out[i])));
          }
        }
      }
    }
  }
}

TEST(MoeRoutingTest, ShufflePackAndUnpackMatchTheCpu) {
  RequireGpu();
  std::mt19937 rng(3);
  for (int64_t rows : {0, 1, 31, 4096}) {
    for (int64_t hidden : {1, 128, 1000}) {
      std::vector<int32_t> order(rows);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<float> x(rows * hidden), want(rows * hidden);
      for (float& v : x) v = static_cast<float>(rng() % 1000);
      cpu::ShufflePack(x.data(), order.data(), rows, hidden, want.data());
      Device<float> d_x(x), d_packed(rows * hidden), d_back(rows * hidden);
      Device<int32_t> d_order(order);
      ASSERT_EQ(LaunchShufflePack(d_x.get(), d_order.get(), rows, hidden, d_packed.get(), nullptr),
                cudaSuccess);
      ASSERT_EQ(d_packed.Host(), want);
      ASSERT_EQ(
          LaunchShuffleUnpack(d_packed.get(), d_order.get(), rows, hidden, d_back.get(), nullptr),
          cudaSuccess);
      ASSERT_EQ(d_back.Host(), x);
    }
  }
}

}  // namespace
}  // namespace semmoe::kernels::cuda
