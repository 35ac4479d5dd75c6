// The device half of a GPU rank's live rollout (GpuWeights::SetExperts), on a GPU: a MoE layer
// moves from one set of experts to another — the gained uploaded, the kept moved on the device
// into the new bf16 stack, the lost freed — and every expert's device bytes are then its host
// weights (rounded to bf16, or f32). Needs a GPU (tag gpu).
#include "engine/gpu/gpu_weights.h"

#include <cuda_runtime_api.h>

#include <map>
#include <vector>

#include "engine/forward/bf16_view.h"
#include "engine/forward/testing/random_model.h"
#include "gtest/gtest.h"
#include "kernels/cuda/cuda_status.h"

namespace semmoe::engine::gpu {
namespace {

template <typename T>
std::vector<T> ToHost(const T* device, int64_t n) {
  std::vector<T> out(n);
  EXPECT_EQ(cudaMemcpy(out.data(), device, sizeof(T) * n, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

class GpuWeightsTest : public ::testing::TestWithParam<bool> {};

TEST_P(GpuWeightsTest, SetExpertsUploadsKeepsAndFrees) {
  auto devices = kernels::cuda::DeviceCount();
  ASSERT_TRUE(devices.ok() && *devices > 0) << "needs a GPU";
  const bool bf16 = GetParam();
  const model::ModelConfig c = forward::testing::RandomModelConfig(model::Arch::kDeepseekV3);
  const model::ModelWeights all = forward::testing::RandomWeights(c, 5);
  const int layer = c.MoeLayers().back();
  model::ModelWeights mine = all;  // This rank holds experts 0, 1 and 2 of `layer` at first.
  for (int e = 3; e < c.num_experts; ++e) mine.layers[layer].experts[e] = model::MlpWeights();
  auto w = UploadWeights(c, mine, /*every_expert=*/false, bf16);
  ASSERT_TRUE(w.ok()) << w.status();
  GpuWeights& g = **w;
  const int64_t before = g.bytes;
  const std::map<int32_t, const model::MlpWeights*> gained = {{3, &all.layers[layer].experts[3]},
                                                              {5, &all.layers[layer].experts[5]}};
  // Expert 6 is neither here nor gained: refused, nothing changed.
  EXPECT_EQ(g.SetExperts(layer, {1, 3, 6}, gained).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(g.View().layers[layer].experts[0].gate.empty());
  ASSERT_TRUE(g.SetExperts(layer, {1, 3, 5}, gained).ok());
  const forward::ModelView model_view = g.View();  // A value: the layer's view refers into it.
  const forward::LayerView& view = model_view.layers[layer];
  for (int e = 0; e < c.num_experts; ++e) {
    const bool held = e == 1 || e == 3 || e == 5;
    EXPECT_EQ(!view.experts[e].gate.empty(), held) << "expert " << e;
    if (!held) continue;
    const model::MlpWeights& host = all.layers[layer].experts[e];
    for (auto [part, want] : {std::pair{&forward::MlpView::gate, &host.gate},
                              std::pair{&forward::MlpView::up, &host.up},
                              std::pair{&forward::MlpView::down, &host.down}}) {
      const forward::LinearView& v = view.experts[e].*part;
      const int64_t n = want->rows() * want->cols();
      ASSERT_EQ(v.rows * v.cols, n);
      if (bf16) {
        EXPECT_EQ(ToHost(v.w16, n), forward::ToBf16Bits(want->w.data(), n)) << "expert " << e;
      } else {
        EXPECT_EQ(ToHost(v.w, n), std::vector<float>(want->w.data(), want->w.data() + n));
      }
    }
  }
  if (bf16) {
    EXPECT_EQ(view.stacked.experts, (std::vector<int32_t>{1, 3, 5}));
  }
  EXPECT_EQ(g.bytes, before);  // Three experts before, three after.
}

INSTANTIATE_TEST_SUITE_P(Precision, GpuWeightsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "bf16" : "f32";
                         });

}  // namespace
}  // namespace semmoe::engine::gpu
