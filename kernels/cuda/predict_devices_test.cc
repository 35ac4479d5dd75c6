// The GPU device prediction against its CPU reference on random tables: ids seen, unseen and out
// of range, predecessors that are learned contexts and that are not, histories with and without
// an A table, and none. Needs a GPU (tag gpu).
#include "kernels/cuda/predict_devices.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/predict_devices.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/testing/device_memory.h"
#include "kernels/cuda/testing/error_report.h"

namespace semmoe::kernels::cuda {
namespace {

using testing::ToDevice;
using testing::ToHost;

TEST(PredictDevicesTest, MatchesTheCpu) {
  auto devices = DeviceCount();
  ASSERT_TRUE(devices.ok() && *devices > 0) << "needs a GPU";
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(0, 1);
  for (int g : {1, 2, 8, 32}) {
    for (bool history : {false, true}) {
      const int64_t vocab = 151936, rows = 4000, tokens = 3000;
      std::vector<int32_t> row_of_token(vocab, -1);
      for (int64_t r = 0; r < rows; ++r) row_of_token[rng() % vocab] = static_cast<int32_t>(r);
      std::vector<float> shares((rows + 1) * g);
      for (float& s : shares) s = unit(rng);
      std::set<uint64_t> keys;
      while (keys.size() < 5000) {
        keys.insert((static_cast<uint64_t>(rng() % vocab) << 32) | (rng() % vocab));
      }
      const std::vector<uint64_t> context_keys(keys.begin(), keys.end());
      std::vector<float> context_shares(context_keys.size() * g);
      for (float& s : context_shares) s = unit(rng);
      std::vector<int32_t> ids(tokens), previous(tokens);
      std::vector<float> prev1(tokens), prev2(tokens);
      for (int64_t t = 0; t < tokens; ++t) {
        const uint64_t key = context_keys[rng() % context_keys.size()];
        const bool pair = rng() % 3 == 0;
        ids[t] = pair ? static_cast<int32_t>(key & 0xffffffffu)
                      : static_cast<int32_t>(rng() % (vocab + 100)) - 1;  // −1 and past the end.
        previous[t] = pair ? static_cast<int32_t>(key >> 32) : static_cast<int32_t>(rng() % 5) - 1;
        prev1[t] = static_cast<float>(static_cast<int>(rng() % (g + 1)) - 1);
        prev2[t] = static_cast<float>(static_cast<int>(rng() % (g + 1)) - 1);
      }
      std::vector<int32_t> a_device((g + 1) * g);
      std::vector<float> a_confidence(a_device.size());
      for (size_t s = 0; s < a_device.size(); ++s) {
        a_device[s] = static_cast<int32_t>(rng() % (g + 1)) - 1;
        a_confidence[s] = unit(rng);
      }
      PredictDevicesArgs args{.ids = ids.data(),
                              .previous = previous.data(),
                              .tokens = tokens,
                              .devices = g,
                              .row_of_token = row_of_token.data(),
                              .vocab = vocab,
                              .shares = shares.data(),
                              .unseen_row = rows,
                              .context_keys = context_keys.data(),
                              .contexts = static_cast<int64_t>(context_keys.size()),
                              .context_shares = context_shares.data(),
                              .prev2 = history ? prev2.data() : nullptr,
                              .prev1 = history ? prev1.data() : nullptr,
                              .a_device = history ? a_device.data() : nullptr,
                              .a_confidence = history ? a_confidence.data() : nullptr};
      std::vector<float> want(tokens * g);
      args.scores = want.data();
      cpu::PredictDevices(args);

      PredictDevicesArgs d = args;
      d.ids = ToDevice(ids);
      d.previous = ToDevice(previous);
      d.row_of_token = ToDevice(row_of_token);
      d.shares = ToDevice(shares);
      d.context_keys = ToDevice(context_keys);
      d.context_shares = ToDevice(context_shares);
      float* scores = ToDevice(std::vector<float>(tokens * g));
      d.scores = scores;
      if (history) {
        d.prev1 = ToDevice(prev1);
        d.prev2 = ToDevice(prev2);
        d.a_device = ToDevice(a_device);
        d.a_confidence = ToDevice(a_confidence);
      }
      ASSERT_EQ(LaunchPredictDevices(d, nullptr), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<float> got = ToHost(scores, tokens * g);
      testing::ErrorReport::Add("predict_devices", got, want);
      EXPECT_EQ(got, want) << "devices " << g << " history " << history;
      for (const void* p :
           {static_cast<const void*>(d.ids), static_cast<const void*>(d.previous),
            static_cast<const void*>(d.row_of_token), static_cast<const void*>(d.shares),
            static_cast<const void*>(d.context_keys), static_cast<const void*>(d.context_shares),
            static_cast<const void*>(scores), static_cast<const void*>(d.prev1),
            static_cast<const void*>(d.prev2), static_cast<const void*>(d.a_device),
            static_cast<const void*>(d.a_confidence)}) {
        if (p != nullptr) cudaFree(const_cast<void*>(p));
      }
    }
  }
}

}  // namespace
}  // namespace semmoe::kernels::cuda
