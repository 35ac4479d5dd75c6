// The FP8 forward (engine --precision fp8) emulated on the CPU (ForwardRunner over CpuOps, the GPU
// path's operations): an FP8 checkpoint's linear layers stay FP8 in memory and each layer is
// dequantised to bf16 before it runs. Its logits must equal the bf16 forward's on the same
// checkpoint dequantised at load — bit for bit, prefill and decode — and its linear layers take
// about half of bf16's bytes.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/file.h"
#include "engine/forward/bf16_view.h"
#include "engine/forward/cpu_ops.h"
#include "engine/forward/forward_runner.h"
#include "engine/forward/fp8_view.h"
#include "engine/forward/testing/bf16_tolerance.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/runtime/kv_cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::engine::forward {
namespace {

using model::Arch;

struct Case {
  std::string name;
  ::semmoe::testing::TinyModelOptions options;
};

class Fp8ForwardTest : public ::testing::TestWithParam<Case> {};

TEST_P(Fp8ForwardTest, EqualsTheBf16ForwardOfTheDequantisedModel) {
  const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), GetParam().name);
  ASSERT_TRUE(::semmoe::testing::WriteTinyModel(GetParam().options, dir).ok());
  auto loaded = testing::LoadHostModel(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const model::ModelConfig& c = loaded->config;
  const model::ModelWeights& w = *loaded->weights;
  ASSERT_TRUE(c.fp8.enabled());
  // The FP8 view as the FP8 device forward builds it: from weights loaded FP8-only (no f32 copy
  // of an FP8 weight is ever made).
  auto fp8_only = testing::LoadHostModel(dir, {.fp8_in_memory = true});
  ASSERT_TRUE(fp8_only.ok()) << fp8_only.status();
  ASSERT_TRUE(model::HasFp8OnlyWeights(*fp8_only->weights));
  // What the FP8-only load holds instead of an FP8 weight's f32 values (4 bytes each): its codes
  // (1 byte each) and block scales (4 bytes a block) — nothing else differs.
  int64_t fp8_values = 0, fp8_scales = 0;
  auto count = [&](const model::LinearWeight& l) {
    EXPECT_TRUE(l.fp8.empty() || l.fp8_only());
    fp8_values += static_cast<int64_t>(l.fp8.codes.size());
    fp8_scales += static_cast<int64_t>(l.fp8.scales.size());
  };
  for (const model::LayerWeights& l : fp8_only->weights->layers) {
    for (const model::LinearWeight* x : model::NonExpertLinears(l)) count(*x);
    for (const model::MlpWeights& e : l.experts) count(e.gate), count(e.up), count(e.down);
  }
  EXPECT_GT(fp8_values, 0);
  EXPECT_EQ(model::WeightBytes(w) - model::WeightBytes(*fp8_only->weights),
            4 * fp8_values - (fp8_values + 4 * fp8_scales));
  auto bf16 = HostBf16Weights::Make(w);
  auto fp8 = HostFp8Weights::Make(*fp8_only->weights);
  ASSERT_TRUE(bf16.ok() && fp8.ok()) << bf16.status() << fp8.status();
  // Neither the bf16 view nor the CPU forward can be made of FP8-only weights; they say so.
  EXPECT_THAT(HostBf16Weights::Make(*fp8_only->weights).status().message(),
              ::testing::HasSubstr("held only in FP8"));

  // What stays FP8: the projections; experts stacked as codes; the LM head (stored in the
  // model's dtype) bf16.
  const ModelView& v = (*fp8)->view();
  ASSERT_TRUE(HasFp8(v));
  const LayerView& moe = v.layers.back();
  ASSERT_TRUE(moe.is_moe);
  EXPECT_NE(moe.o.fp8.codes, nullptr);
  EXPECT_EQ(moe.o.w16, nullptr);
  EXPECT_EQ(moe.o.w, nullptr);
  EXPECT_NE(moe.stacked.gate8.codes, nullptr);
  EXPECT_EQ(moe.stacked.gate, nullptr);
  EXPECT_NE(v.lm_head.w16, nullptr);
  EXPECT_EQ(moe.router.w, fp8_only->weights->layers.back().router.data());  // f32, in place.

  // The linear layers' bytes, the LM head (bf16 in both) aside: FP8 codes plus one f32 scale a
  // block against bf16's two bytes a value.
  const int64_t head = 2 * v.lm_head.rows * v.lm_head.cols;
  const double ratio = static_cast<double>((*fp8)->bytes() - head) /
                       static_cast<double>((*bf16)->bf16_bytes() - head);
  EXPECT_GE(ratio, 0.5);
  EXPECT_LE(ratio, 0.52) << (*fp8)->bytes() << " against " << (*bf16)->bf16_bytes();

  // Prefill (every position's logits), then decode steps, through both forwards.
  constexpr int kPages = 64, kPageSize = 4;
  auto cache = runtime::PagedKvCache::Create(
      {.num_layers = c.num_layers, .shape = c.kv_shape(), .page_size = kPageSize,
       .num_pages = kPages});
  ASSERT_TRUE(cache.ok()) << cache.status();
  CpuOps ops_a, ops_b;
  ForwardRunner<CpuOps> a(c, v, {kPages, kPageSize, /*bf16=*/true}, ops_a);
  ForwardRunner<CpuOps> b(c, (*bf16)->view(), {kPages, kPageSize, /*bf16=*/true}, ops_b);
  ASSERT_TRUE(a.Init().ok());
  ASSERT_TRUE(b.Init().ok());
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
  std::vector<std::vector<int32_t>> prompts(3);
  std::vector<model::SequenceInput> prefill;
  for (int s = 0; s < 3; ++s) {
    for (int t = 0; t < 5 + 2 * s; ++t) prompts[s].push_back((13 * s + 7 * t + 2) % c.vocab_size);
    seqs.push_back((*cache)->NewSequence());
    ASSERT_TRUE((*cache)->Reserve(*seqs.back(), 20).ok());
    prefill.push_back({prompts[s], 0, seqs[s].get(), model::LogitsMode::kAll});
  }
  auto same = [&](absl::Span<const model::SequenceInput> batch) {
    auto x = a.Forward(batch, {});
    auto y = b.Forward(batch, {});
    ASSERT_TRUE(x.ok() && y.ok()) << x.status() << y.status();
    EXPECT_GT(y->logits.norm(), 1.0f);
    EXPECT_TRUE(x->logits == y->logits) << "the logits, bit for bit";
  };
  same(prefill);
  std::vector<int> length = {5, 7, 9};
  for (int step = 0; step < 4; ++step) {
    std::vector<int32_t> next(3);
    std::vector<model::SequenceInput> batch;
    for (int s = 0; s < 3; ++s) {
      next[s] = (5 * s + 3 * step + 1) % c.vocab_size;
      batch.push_back({absl::MakeConstSpan(&next[s], 1), length[s]++, seqs[s].get()});
    }
    same(batch);
  }
}

std::vector<Case> Cases() {
  ::semmoe::testing::TinyModelOptions qwen;
  qwen.fp8_block_rows = 16, qwen.fp8_block_cols = 24;  // 64 / 24: partial edge blocks.
  ::semmoe::testing::TinyModelOptions v3;
  v3.arch = Arch::kDeepseekV3;
  v3.hidden_size = 64, v3.num_heads = 4, v3.num_experts = 8, v3.top_k = 2;
  v3.deepseek.q_lora_rank = 24;  // kv_a: 40 rows in blocks of 16, partial as DSv3's 576 in 128.
  v3.deepseek.n_group = 4, v3.deepseek.topk_group = 2;
  v3.fp8_block_rows = 16, v3.fp8_block_cols = 16;
  return {{"qwen3_moe", qwen}, {"deepseek_v3", v3}};
}

INSTANTIATE_TEST_SUITE_P(All, Fp8ForwardTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
}  // namespace semmoe::engine::forward
