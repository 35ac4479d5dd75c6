// The GPU forward on the shared trained model (../shared/models/qwen3-moe-a) against the Hugging
// Face reference outputs stored with it — every prompt's final logits, batched in one pass —,
// greedy decoding on the GPU against greedy decoding on the CPU, all prompts decoding together
// on one paged cache, and the offline prefill runner (score, trace) on the GPU against the CPU.
// Needs a GPU (tag gpu) and SEMMOE_SHARED_DIR (tests/gpu/run.sh sets it to the copy build.sh
// packs). No tokenizer: the reference holds the prompts' token ids.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "common/file.h"
#include "common/testing/shared_data.h"
#include "engine/forward/cpu_forward.h"
#include "engine/forward/testing/bf16_tolerance.h"
#include "engine/gpu/gpu_prefill.h"
#include "engine/gpu/gpu_transformer.h"
#include "engine/model/forward_io.h"
#include "engine/model/weights.h"
#include "engine/offline/cpu_prefill.h"
#include "engine/offline/prefill_runner.h"
#include "engine/runtime/kv_cache.h"
#include "engine/text/config.h"
#include "gtest/gtest.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/testing/error_report.h"
#include "kernels/safetensors.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::gpu {
namespace {

using model::LogitsMode;
using model::SequenceInput;

std::vector<float> ReadFloats(const std::string& path) {
  auto bytes = ReadFile(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  std::vector<float> out(bytes.ok() ? bytes->size() / sizeof(float) : 0);
  if (!out.empty()) std::memcpy(out.data(), bytes->data(), out.size() * sizeof(float));
  return out;
}

int32_t Argmax(const float* row, int n) { return std::max_element(row, row + n) - row; }

// The gap between the best and the second-best logit.
float Margin(const float* row, int n) {
  std::vector<float> v(row, row + n);
  std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<float>());
  return v[0] - v[1];
}

// The shared model loaded once per test (no tokenizer), with its CPU forward.
class GpuReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto devices = kernels::cuda::DeviceCount();
    ASSERT_TRUE(devices.ok() && *devices > 0) << "needs a GPU";
    SEMMOE_REQUIRE_PATH_FROM_ENV(shared, "SEMMOE_SHARED_DIR");
    dir_ = JoinPath(shared, "models/qwen3-moe-a");
    auto config = model::LoadModelConfig(dir_);
    ASSERT_TRUE(config.ok()) << config.status();
    config_ = *config;
    auto checkpoint = kernels::Checkpoint::Open(dir_);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    auto weights = model::LoadWeights(config_, **checkpoint);
    ASSERT_TRUE(weights.ok()) << weights.status();
    weights_ = std::move(*weights);
    // The CPU product's forward, its arena indexed by the same page tables as the GPU's.
    auto cpu = forward::CpuForward::Create(config_, *weights_,
                                           {.num_pages = kPages, .page_size = kPageSize});
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    cpu_ = std::move(*cpu);
    auto meta_text = ReadFile(JoinPath(dir_, "reference/prompts.json"));
    ASSERT_TRUE(meta_text.ok());
    meta_ = nlohmann::json::parse(*meta_text);
  }
  static constexpr int kPageSize = 16, kPages = 512;
  std::string dir_;
  model::ModelConfig config_;
  std::unique_ptr<model::ModelWeights> weights_;
  std::unique_ptr<forward::CpuForward> cpu_;
  nlohmann::json meta_;
};

TEST_F(GpuReferenceTest, SharedModelFinalLogitsAndGreedyDecoding) {
  const int page_size = kPageSize, pages = kPages;
  auto gpu =
      GpuTransformer::Create(config_, *weights_, {.num_pages = pages, .page_size = page_size});
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  auto cache = runtime::PagedKvCache::Create({.num_layers = config_.num_layers,
                                              .shape = config_.kv_shape(),
                                              .page_size = page_size,
                                              .num_pages = pages});
  ASSERT_TRUE(cache.ok());

  const nlohmann::json& meta = meta_;
  const std::vector<float> final_logits = ReadFloats(JoinPath(dir_, "reference/final_logits.f32"));
  const int vocab = config_.vocab_size;
  const int steps = 24;

  // Pass 1: every prompt in one batch, last-position logits, against the reference.
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int> index;
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
  std::vector<SequenceInput> batch;
  for (const auto& p : meta["prompts"]) {
    prompts.push_back(p["token_ids"].get<std::vector<int32_t>>());
    index.push_back(p["index"].get<int>());
    seqs.push_back((*cache)->NewSequence());
    ASSERT_TRUE((*cache)->Reserve(*seqs.back(), prompts.back().size() + steps).ok());
  }
  ASSERT_GT(prompts.size(), 10u);
  for (size_t s = 0; s < prompts.size(); ++s) {
    batch.push_back({prompts[s], 0, seqs[s].get(), LogitsMode::kLast});
  }
  auto g = (*gpu)->Forward(batch);
  ASSERT_TRUE(g.ok()) << g.status();
  auto c = cpu_->Forward(batch);
  ASSERT_TRUE(c.ok()) << c.status();
  const std::vector<float> ref_rows = [&] {
    std::vector<float> rows;
    for (int i : index) {
      rows.insert(rows.end(), final_logits.begin() + static_cast<size_t>(i) * vocab,
                  final_logits.begin() + static_cast<size_t>(i + 1) * vocab);
    }
    return rows;
  }();
  kernels::cuda::testing::ErrorReport::Add("gpu_forward qwen3-moe-a final logits vs HF reference",
                                           absl::MakeConstSpan(g->logits.data(), g->logits.size()),
                                           ref_rows);
  for (size_t s = 0; s < prompts.size(); ++s) {
    double diff = 0, norm = 0;
    for (int v = 0; v < vocab; ++v) {
      const double ref = final_logits[static_cast<size_t>(index[s]) * vocab + v];
      diff += (g->logits(s, v) - ref) * (g->logits(s, v) - ref);
      norm += ref * ref;
    }
    EXPECT_LT(std::sqrt(diff / norm), 1e-4) << "prompt " << index[s];  // As the CPU's test.
  }

  // Greedy decoding, all prompts together: the GPU's tokens are the CPU's, up to a step where the
  // CPU's top two logits are closer than float noise (then that prompt stops being compared).
  std::vector<int32_t> gpu_next(prompts.size()), cpu_next(prompts.size());
  std::vector<bool> compared(prompts.size(), true);
  int compared_tokens = 0;
  for (int step = 0; step < steps; ++step) {
    for (size_t s = 0; s < prompts.size(); ++s) {
      gpu_next[s] = Argmax(g->logits.row(s).data(), vocab);
      cpu_next[s] = Argmax(c->logits.row(s).data(), vocab);
      if (!compared[s]) continue;
      if (Margin(c->logits.row(s).data(), vocab) < 1e-3f) {
        compared[s] = false;
        continue;
      }
      EXPECT_EQ(gpu_next[s], cpu_next[s]) << "prompt " << index[s] << " step " << step;
      ++compared_tokens;
    }
    std::vector<SequenceInput> gb, cb;
    for (size_t s = 0; s < prompts.size(); ++s) {
      const int position = static_cast<int>(prompts[s].size()) + step;
      gb.push_back({absl::MakeConstSpan(&gpu_next[s], 1), position, seqs[s].get()});
      cb.push_back({absl::MakeConstSpan(&cpu_next[s], 1), position, seqs[s].get()});
    }
    g = (*gpu)->Forward(gb);
    ASSERT_TRUE(g.ok()) << g.status();
    c = cpu_->Forward(cb);
    ASSERT_TRUE(c.ok()) << c.status();
  }
  EXPECT_GT(compared_tokens, static_cast<int>(prompts.size()) * steps * 3 / 4);
}

// The bf16 GPU forward (the serving default) against the fp32 reference, within the tolerance the
// model's README states for a bf16 engine; the CPU emulation of the same path meets it in CI
// (bf16_reference_test).
TEST_F(GpuReferenceTest, SharedModelBf16WithinTheReadmeTolerance) {
  auto gpu = GpuTransformer::Create(config_, *weights_,
                                    {.device = 0, .bf16 = true, .num_pages = 512, .page_size = 16});
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  auto t = forward::testing::MeasureAgainstReference(
      dir_, config_,
      [&](absl::Span<const SequenceInput> batch, const model::ForwardOptions& options) {
        return (*gpu)->Forward(batch, options);
      });
  ASSERT_TRUE(t.ok()) << t.status();
  std::cout << "bf16 (GPU) vs fp32 reference, qwen3-moe-a: " << t->Describe() << "\n";
  forward::testing::ExpectWithinBf16Tolerance(*t);
}

// `engine score` / `engine trace` on the GPU: the prefill runner through GpuPrefill gives the
// CPU's last logits and routing, prompt by prompt, over several batches.
TEST_F(GpuReferenceTest, PrefillRunnerOnTheGpuMatchesTheCpu) {
  const int budget = 256;
  auto gpu = CreateGpuPrefill(config_, *weights_, GpuTarget{.device = 0}, budget);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  auto cpu = offline::CreateCpuPrefill(config_, *weights_, budget);
  ASSERT_TRUE(cpu.ok()) << cpu.status();

  struct Result {
    std::vector<float> logits;
    std::vector<int32_t> experts;  // [tokens × MoE layers × k]
  };
  auto run = [&](offline::PrefillBackend backend) {
    std::vector<Result> results;
    offline::PrefillRunner runner(
        config_, budget,
        [&](const offline::PromptResult& r) {
          Result out{{r.last_logits, r.last_logits + config_.vocab_size}, {}};
          for (size_t t = 0; t < r.tokens.size(); ++t) {
            for (const int32_t* layer : r.expert_ids) {
              out.experts.insert(out.experts.end(), layer + t * config_.top_k,
                                 layer + (t + 1) * config_.top_k);
            }
          }
          results.push_back(std::move(out));
          return absl::OkStatus();
        },
        std::move(backend));
    for (const auto& p : meta_["prompts"]) {
      EXPECT_TRUE(runner.Add(p["token_ids"].get<std::vector<int32_t>>()).ok());
    }
    EXPECT_TRUE(runner.Flush().ok());
    return results;
  };
  const std::vector<Result> want = run((*cpu)->backend());
  const std::vector<Result> got = run((*gpu)->backend());
  ASSERT_EQ(got.size(), want.size());
  ASSERT_GT(want.size(), 10u);
  int64_t same = 0, total = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double diff = 0, norm = 0;
    for (size_t v = 0; v < want[i].logits.size(); ++v) {
      diff += (got[i].logits[v] - want[i].logits[v]) * (got[i].logits[v] - want[i].logits[v]);
      norm += want[i].logits[v] * want[i].logits[v];
    }
    EXPECT_LT(std::sqrt(diff / norm), 1e-5) << "prompt " << i;
    ASSERT_EQ(got[i].experts.size(), want[i].experts.size());
    for (size_t j = 0; j < want[i].experts.size(); ++j)
      same += got[i].experts[j] == want[i].experts[j];
    total += static_cast<int64_t>(want[i].experts.size());
  }
  EXPECT_GE(static_cast<double>(same) / total, 0.999) << same << " of " << total;
}

}  // namespace
}  // namespace semmoe::engine::gpu
