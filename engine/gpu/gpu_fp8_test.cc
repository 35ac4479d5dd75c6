// FP8 weights on the GPU (engine --precision fp8): an FP8 checkpoint's FP8 layers stay FP8 in
// device memory and each layer is dequantised to bf16 before it runs, so the logits are the bf16
// forward's on the same checkpoint — the same bf16 operands into the same kernels — for less
// device memory. CI checks the same equality in the CPU emulation
// (//engine/forward:fp8_forward_test). Needs a GPU (tag gpu).
#include <memory>
#include <string>
#include <vector>

#include "common/file.h"
#include "engine/forward/testing/bf16_tolerance.h"
#include "engine/gpu/gpu_transformer.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/runtime/kv_cache.h"
#include "gtest/gtest.h"

namespace semmoe::engine::gpu {
namespace {

using model::Arch;
using model::LogitsMode;

class GpuFp8Test : public ::testing::TestWithParam<Arch> {};

TEST_P(GpuFp8Test, EqualsTheBf16ForwardWithLessMemory) {
  ::semmoe::testing::TinyModelOptions o;
  o.arch = GetParam();
  o.fp8_block_rows = 16, o.fp8_block_cols = 24;  // Partial edge blocks.
  if (GetParam() == Arch::kDeepseekV3) {
    o.hidden_size = 64, o.num_heads = 4, o.num_experts = 8, o.top_k = 2;
    o.deepseek.q_lora_rank = 24;
    o.deepseek.n_group = 4, o.deepseek.topk_group = 2;
  }
  const std::string dir =
      JoinPath(std::getenv("TEST_TMPDIR"), std::string("fp8_") + std::string(model::ArchName(o.arch)));
  ASSERT_TRUE(::semmoe::testing::WriteTinyModel(o, dir).ok());
  auto loaded = forward::testing::LoadHostModel(dir);
  auto fp8_only = forward::testing::LoadHostModel(dir, {.fp8_in_memory = true});
  ASSERT_TRUE(loaded.ok() && fp8_only.ok()) << loaded.status() << fp8_only.status();
  const model::ModelConfig& c = loaded->config;
  constexpr int kPages = 64, kPageSize = 4;
  // FP8 needs its load: the weights dequantised on the host are refused, saying so.
  EXPECT_FALSE(GpuTransformer::Create(c, *loaded->weights,
                                      {.device = 0, .bf16 = true, .fp8 = true, .num_pages = kPages,
                                       .page_size = kPageSize})
                   .ok());
  auto fp8 = GpuTransformer::Create(c, *fp8_only->weights,
                                    {.device = 0, .bf16 = true, .fp8 = true, .num_pages = kPages,
                                     .page_size = kPageSize, .decode_graphs = 4});
  auto bf16 = GpuTransformer::Create(
      c, *loaded->weights, {.device = 0, .bf16 = true, .num_pages = kPages, .page_size = kPageSize});
  ASSERT_TRUE(fp8.ok() && bf16.ok()) << fp8.status() << bf16.status();
  EXPECT_TRUE((*fp8)->fp8());
  EXPECT_LT((*fp8)->weight_bytes(), (*bf16)->weight_bytes());
  auto cache = runtime::PagedKvCache::Create({.num_layers = c.num_layers,
                                              .shape = c.kv_shape(),
                                              .page_size = kPageSize,
                                              .num_pages = kPages});
  ASSERT_TRUE(cache.ok()) << cache.status();
  std::vector<std::vector<int32_t>> tokens = {{1, 5, 9, 2, 7}, {3, 3, 8}, {4, 1, 2, 6, 8, 9, 10}};
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
  std::vector<model::SequenceInput> batch;
  std::vector<int> length;
  for (auto& t : tokens) {
    for (int32_t& id : t) id %= c.vocab_size;
    seqs.push_back((*cache)->NewSequence());
    ASSERT_TRUE((*cache)->Reserve(*seqs.back(), 16).ok());
    batch.push_back({t, 0, seqs.back().get(), LogitsMode::kAll});
    length.push_back(static_cast<int>(t.size()));
  }
  auto same = [&](absl::Span<const model::SequenceInput> b) {
    auto got = (*fp8)->Forward(b, {});
    auto want = (*bf16)->Forward(b, {});
    ASSERT_TRUE(got.ok() && want.ok()) << got.status() << want.status();
    EXPECT_GT(want->logits.norm(), 1.0f);
    EXPECT_TRUE(got->logits == want->logits) << "the logits, bit for bit";
  };
  same(batch);
  for (int step = 0; step < 3; ++step) {  // Decode steps (the FP8 one as CUDA graphs).
    std::vector<int32_t> next(seqs.size());
    std::vector<model::SequenceInput> decode;
    for (size_t s = 0; s < seqs.size(); ++s) {
      next[s] = static_cast<int32_t>((7 * s + step + 1) % c.vocab_size);
      decode.push_back({absl::MakeConstSpan(&next[s], 1), length[s]++, seqs[s].get()});
    }
    same(decode);
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, GpuFp8Test, ::testing::Values(Arch::kQwen3Moe, Arch::kDeepseekV3),
                         [](const ::testing::TestParamInfo<Arch>& i) {
                           return std::string(model::ArchName(i.param));
                         });

}  // namespace
}  // namespace semmoe::engine::gpu
