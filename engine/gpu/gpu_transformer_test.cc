// The GPU forward against the CPU forward (engine/model/transformer.h, itself checked against a
// float64 reference by architectures_test) on seeded random models of every architecture's
// features — QK-norm, attention biases, a dense layer between MoE layers, a gated shared expert,
// renormalised or raw top-k — over ragged prefill batches with every logits mode, chunked
// prefill next to decode steps, decode across page boundaries, the routing, an empty batch and
// the errors. Needs a GPU (tag gpu). Kept free of the tokenizer (and so of ICU) to ship small.
#include "engine/gpu/gpu_transformer.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/model/transformer.h"
#include "engine/runtime/kv_cache.h"
#include "gtest/gtest.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/testing/error_report.h"

namespace semmoe::engine::gpu {
namespace {

using model::Arch;
using model::LogitsMode;
using model::Matrix;
using model::ModelConfig;
using model::SequenceInput;

bool HaveGpu() {
  auto n = kernels::cuda::DeviceCount();
  return n.ok() && *n > 0;
}

ModelConfig Config(Arch arch) {
  ModelConfig c;
  c.arch = arch;
  c.vocab_size = 300;
  c.hidden_size = 128;
  c.num_layers = 3;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 32;  // The GPU attention takes multiples of 32.
  c.max_position_embeddings = 256;
  c.rope_theta = 10000.0;
  c.num_experts = 8;
  c.top_k = 2;
  c.moe_intermediate_size = 48;
  c.norm_topk_prob = true;
  c.intermediate_size = 96;
  if (arch == Arch::kQwen3Moe) {
    c.qk_norm = true;
    c.mlp_only_layers = {1};  // A dense layer between MoE layers.
  } else if (arch == Arch::kQwen2Moe) {
    c.attention_bias = true;
    c.shared_expert_intermediate_size = 64;
    c.norm_topk_prob = false;
  } else {
    c.num_experts = 4;
  }
  return c;
}

// N(0, 0.08²) weights, N(1, 0.1²) norms: the tiny_model recipe, in memory.
class RandomWeights {
 public:
  explicit RandomWeights(uint64_t seed) : rng_(seed) {}
  model::ModelWeights Make(const ModelConfig& c) {
    model::ModelWeights w;
    w.embed = Mat(c.vocab_size, c.hidden_size);
    for (int l = 0; l < c.num_layers; ++l) {
      model::LayerWeights L;
      L.input_norm = Norm(c.hidden_size);
      L.post_attention_norm = Norm(c.hidden_size);
      L.q.w = Mat(c.q_size(), c.hidden_size);
      L.k.w = Mat(c.kv_size(), c.hidden_size);
      L.v.w = Mat(c.kv_size(), c.hidden_size);
      L.o.w = Mat(c.hidden_size, c.q_size());
      if (c.attention_bias) {
        L.q_bias = Mat(c.q_size(), 1).col(0);
        L.k_bias = Mat(c.kv_size(), 1).col(0);
        L.v_bias = Mat(c.kv_size(), 1).col(0);
      }
      if (c.qk_norm) {
        L.q_norm = Norm(c.head_dim);
        L.k_norm = Norm(c.head_dim);
      }
      L.is_moe = c.IsMoeLayer(l);
      if (!L.is_moe) {
        L.dense = Mlp(c.hidden_size, c.intermediate_size);
      } else {
        L.router = Mat(c.num_experts, c.hidden_size);
        for (int e = 0; e < c.num_experts; ++e) {
          L.experts.push_back(Mlp(c.hidden_size, c.moe_intermediate_size));
        }
        if (c.shared_expert_intermediate_size > 0) {
          L.shared_expert = Mlp(c.hidden_size, c.shared_expert_intermediate_size);
          L.shared_expert_gate = Mat(1, c.hidden_size);
        }
      }
      w.layers.push_back(std::move(L));
    }
    w.final_norm = Norm(c.hidden_size);
    w.lm_head.w = Mat(c.vocab_size, c.hidden_size);
    return w;
  }

 private:
  Matrix Mat(int64_t rows, int64_t cols) {
    Matrix m(rows, cols);
    for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = 0.08f * normal_(rng_);
    return m;
  }
  model::Vector Norm(int64_t n) {
    model::Vector v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = 1.0f + 0.1f * normal_(rng_);
    return v;
  }
  model::MlpWeights Mlp(int hidden, int inter) {
    model::MlpWeights m;
    m.gate.w = Mat(inter, hidden);
    m.up.w = Mat(inter, hidden);
    m.down.w = Mat(hidden, inter);
    return m;
  }
  std::mt19937_64 rng_;
  std::normal_distribution<float> normal_;
};

double RelativeMaxDiff(const Matrix& a, const Matrix& b) {
  if (a.size() == 0) return 0;
  return (a - b).cwiseAbs().maxCoeff() / std::max(1e-6f, b.cwiseAbs().maxCoeff());
}

class GpuTransformerTest : public ::testing::TestWithParam<Arch> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(HaveGpu()) << "needs a GPU";
    config_ = Config(GetParam());
    weights_ = RandomWeights(static_cast<uint64_t>(GetParam()) + 21).Make(config_);
    auto cpu = model::Transformer::Create(config_, weights_);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    cpu_ = std::move(*cpu);
    auto cache = runtime::PagedKvCache::Create({.num_layers = config_.num_layers,
                                                .kv_size = config_.kv_size(),
                                                .page_size = kPageSize,
                                                .num_pages = kPages});
    ASSERT_TRUE(cache.ok());
    cache_ = std::move(*cache);
    auto gpu = GpuTransformer::Create(config_, weights_,
                                      {.device = 0, .num_pages = kPages, .page_size = kPageSize});
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    gpu_ = std::move(*gpu);
  }

  // Both forwards on `batch` (each its own arena, the same page tables): logits and routing.
  void ExpectSame(const std::vector<SequenceInput>& batch, const std::string& what) {
    auto cpu = cpu_->Forward(batch, {.collect_routing = true});
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    auto gpu = gpu_->Forward(batch, {.collect_routing = true});
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    ASSERT_EQ(gpu->logits.rows(), cpu->logits.rows()) << what;
    ASSERT_EQ(gpu->logits.cols(), cpu->logits.cols()) << what;
    EXPECT_GT(cpu->logits.cwiseAbs().maxCoeff(), 0.1f) << what;  // Not trivially zero.
    EXPECT_LT(RelativeMaxDiff(gpu->logits, cpu->logits), 1e-4) << what;
    kernels::cuda::testing::ErrorReport::Add(
        absl::StrCat("gpu_forward logits ", model::ArchName(GetParam())),
        absl::MakeConstSpan(gpu->logits.data(), gpu->logits.size()),
        absl::MakeConstSpan(cpu->logits.data(), cpu->logits.size()));
    ASSERT_EQ(gpu->routing.size(), cpu->routing.size()) << what;
    for (size_t l = 0; l < cpu->routing.size(); ++l) {
      const model::Routing& a = gpu->routing[l];
      const model::Routing& b = cpu->routing[l];
      EXPECT_EQ(a.top_k, b.top_k);
      EXPECT_EQ(a.expert_ids, b.expert_ids) << what << " layer " << l;
      ASSERT_EQ(a.weights.size(), b.weights.size());
      for (size_t i = 0; i < b.weights.size(); ++i) {
        EXPECT_NEAR(a.weights[i], b.weights[i], 1e-5) << what << " layer " << l << " entry " << i;
      }
    }
  }

  static constexpr int kPageSize = 4;
  static constexpr int kPages = 64;
  ModelConfig config_;
  model::ModelWeights weights_;
  std::unique_ptr<model::Transformer> cpu_;
  std::unique_ptr<runtime::PagedKvCache> cache_;
  std::unique_ptr<GpuTransformer> gpu_;
};

TEST_P(GpuTransformerTest, PrefillChunksAndDecodeMatchTheCpu) {
  const int vocab = config_.vocab_size;
  const std::vector<int> lengths = {13, 1, 30};  // Ragged; pages of 4: partial last pages.
  std::vector<std::vector<int32_t>> prompts(lengths.size());
  for (size_t s = 0; s < prompts.size(); ++s) {
    for (int t = 0; t < lengths[s]; ++t) prompts[s].push_back((17 * t + 31 * s + 5) % vocab);
  }
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
  for (size_t s = 0; s < prompts.size(); ++s) {
    seqs.push_back(cache_->NewSequence());
    ASSERT_TRUE(cache_->Reserve(*seqs.back(), 64).ok());
  }
  // Sequence 0 in two chunks (8 tokens, no logits), 1 whole (last logits), 2 whole (all).
  const absl::Span<const int32_t> p0(prompts[0]);
  ExpectSame({{p0.subspan(0, 8), 0, seqs[0].get(), LogitsMode::kNone},
              {prompts[1], 0, seqs[1].get(), LogitsMode::kLast},
              {prompts[2], 0, seqs[2].get(), LogitsMode::kAll}},
             "prefill");
  // The rest of sequence 0's prompt next to decode steps of the others.
  const std::vector<int32_t> next = {7, 8};
  ExpectSame({{p0.subspan(8), 8, seqs[0].get(), LogitsMode::kAll},
              {absl::MakeConstSpan(&next[0], 1), 1, seqs[1].get(), LogitsMode::kLast},
              {absl::MakeConstSpan(&next[1], 1), 30, seqs[2].get(), LogitsMode::kLast}},
             "chunk + decode");
  // Decode steps across page boundaries.
  for (int step = 0; step < 6; ++step) {
    const int32_t token = (step * 13 + 3) % vocab;
    const auto one = absl::MakeConstSpan(&token, 1);
    ExpectSame({{one, 13 + step, seqs[0].get(), LogitsMode::kLast},
                {one, 2 + step, seqs[1].get(), LogitsMode::kLast},
                {one, 31 + step, seqs[2].get(), LogitsMode::kLast}},
               absl::StrCat("decode ", step));
  }
}

TEST_P(GpuTransformerTest, EmptyBatchAndErrors) {
  auto empty = gpu_->Forward({});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->logits.rows(), 0);

  const std::vector<int32_t> tokens = {1, 2, 3};
  model::DenseKvSequence dense(config_.num_layers, config_.kv_size(), 8);
  auto unpaged = gpu_->Forward({{tokens, 0, &dense, LogitsMode::kLast}});
  EXPECT_EQ(unpaged.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unpaged.status().message().find("paged KV"), std::string::npos) << unpaged.status();

  auto seq = cache_->NewSequence();
  ASSERT_TRUE(cache_->Reserve(*seq, 8).ok());
  const std::vector<int32_t> bad = {1, config_.vocab_size};
  auto oov = gpu_->Forward({{bad, 0, seq.get(), LogitsMode::kLast}});
  EXPECT_EQ(oov.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(oov.status().message().find("outside the vocabulary"), std::string::npos);

  // A page outside the GPU arena (a host cache bigger than the GPU's).
  auto big = runtime::PagedKvCache::Create({.num_layers = config_.num_layers,
                                            .kv_size = config_.kv_size(),
                                            .page_size = kPageSize,
                                            .num_pages = 2 * kPages});
  ASSERT_TRUE(big.ok());
  auto view = (*big)->View({2 * kPages - 1});
  ASSERT_TRUE(view.ok());
  auto outside = gpu_->Forward({{tokens, 0, view->get(), LogitsMode::kLast}});
  EXPECT_EQ(outside.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(outside.status().message().find("outside the GPU cache"), std::string::npos)
      << outside.status();
}

INSTANTIATE_TEST_SUITE_P(All, GpuTransformerTest,
                         ::testing::Values(Arch::kQwen3Moe, Arch::kQwen2Moe, Arch::kMixtral),
                         [](const ::testing::TestParamInfo<Arch>& info) {
                           return std::string(model::ArchName(info.param));
                         });

TEST(GpuTransformerCreateTest, RejectsShapesTheKernelsDoNotTake) {
  ASSERT_TRUE(HaveGpu()) << "needs a GPU";
  ModelConfig c = Config(Arch::kMixtral);
  c.head_dim = 16;
  c.hidden_size = 64;
  const model::ModelWeights w = RandomWeights(1).Make(c);
  auto gpu = GpuTransformer::Create(c, w, {.num_pages = 4});
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(gpu.status().message().find("head_dim"), std::string::npos) << gpu.status();

  c = Config(Arch::kMixtral);
  model::ModelWeights partial = RandomWeights(2).Make(c);
  partial.layers[1].experts[2] = model::MlpWeights();  // Held by another EP rank.
  gpu = GpuTransformer::Create(c, partial, {.num_pages = 4});
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(gpu.status().message().find("layer 1 expert 2"), std::string::npos) << gpu.status();
}

}  // namespace
}  // namespace semmoe::engine::gpu
