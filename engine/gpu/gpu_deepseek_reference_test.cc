// DeepSeek on the GPU: the deepseek-v3-tiny fixture (MLA with q LoRA, noaux_tc routing over expert
// groups, ungated shared experts) through GpuTransformer, f32 and bf16, against the fp32 reference
// stored with it — the bounds its CPU emulation meets in CI (engine/gpu:bf16_reference_test) —
// and greedy decoding on the GPU against the CPU forward through the latent cache. Needs a GPU
// (tag gpu) and SEMMOE_SHARED_DIR (tests/gpu/run.sh sets it to the copy build.sh packs).
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "common/file.h"
#include "common/testing/shared_data.h"
#include "engine/forward/cpu_forward.h"
#include "engine/forward/testing/bf16_tolerance.h"
#include "engine/gpu/gpu_transformer.h"
#include "engine/model/forward_io.h"
#include "engine/model/weights.h"
#include "engine/runtime/kv_cache.h"
#include "engine/text/config.h"
#include "gtest/gtest.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/safetensors.h"

namespace semmoe::engine::gpu {
namespace {

TEST(GpuDeepseekReferenceTest, FinalLogitsAndGreedyDecoding) {
  auto devices = kernels::cuda::DeviceCount();
  ASSERT_TRUE(devices.ok() && *devices > 0) << "needs a GPU";
  SEMMOE_REQUIRE_SHARED_DIR(shared);
  const std::string dir = JoinPath(shared, "models/deepseek-v3-tiny");
  auto loaded = forward::testing::LoadHostModel(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const model::ModelConfig& config = loaded->config;
  const model::ModelWeights& weights = *loaded->weights;
  const int pages = 512, page_size = 16;
  for (const bool bf16 : {false, true}) {
    auto gpu = GpuTransformer::Create(
        config, weights, {.device = 0, .bf16 = bf16, .num_pages = pages, .page_size = page_size});
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    auto gap = forward::testing::MeasureFinalLogits(
        dir, config,
        [&](absl::Span<const model::SequenceInput> batch, const model::ForwardOptions& options) {
          return (*gpu)->Forward(batch, options);
        });
    ASSERT_TRUE(gap.ok()) << gap.status();
    std::cout << (bf16 ? "bf16" : "f32")
              << " (GPU) vs fp32 reference, deepseek-v3-tiny: " << gap->Describe() << "\n";
    if (bf16) {
      EXPECT_LE(gap->median(), 3e-2);
      EXPECT_LE(gap->worst(), 0.3);
      EXPECT_GE(gap->argmax_same, gap->prompts - 3);
      continue;
    }
    EXPECT_LT(gap->worst(), 1e-4);
    EXPECT_EQ(gap->argmax_same, gap->prompts);
    // Greedy decoding through the latent cache, f32: the GPU's tokens are the CPU's.
    auto cpu = forward::CpuForward::Create(config, weights,
                                           {.num_pages = pages, .page_size = page_size});
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    auto cache = runtime::PagedKvCache::Create({.num_layers = config.num_layers,
                                                .shape = config.kv_shape(),
                                                .page_size = page_size,
                                                .num_pages = pages});
    ASSERT_TRUE(cache.ok());
    std::vector<int32_t> prompt = {1, 17, 300, 4000, 42, 7, 99, 1234};
    auto seq = (*cache)->NewSequence();
    ASSERT_TRUE((*cache)->Reserve(*seq, 64).ok());
    std::vector<int32_t> tokens = prompt;
    int position = 0;
    for (int step = 0; step < 24; ++step) {
      const absl::Span<const int32_t> fresh = absl::MakeConstSpan(tokens).subspan(position);
      auto g = (*gpu)->Forward({{fresh, position, seq.get()}});
      auto c = (*cpu)->Forward({{fresh, position, seq.get()}});
      ASSERT_TRUE(g.ok() && c.ok()) << g.status() << c.status();
      const float* gr = g->logits.row(0).data();
      const float* cr = c->logits.row(0).data();
      const int vocab = config.vocab_size;
      const int32_t gn = std::max_element(gr, gr + vocab) - gr;
      const int32_t cn = std::max_element(cr, cr + vocab) - cr;
      EXPECT_EQ(gn, cn) << "step " << step;
      position = static_cast<int>(tokens.size());
      tokens.push_back(cn);
    }
  }
}

}  // namespace
}  // namespace semmoe::engine::gpu
