// Block-scaled FP8 checkpoints (DeepSeek-V3's and Qwen3's published format): the engine loads
// them as the same model dequantised offline — the same f32 weights and the same logits, bit for
// bit (docs/ENGINE.md "FP8 checkpoints") — and refuses broken ones naming the tensor.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "engine/forward/testing/paged_cpu_forward.h"
#include "engine/model/model.h"
#include "engine/model/testing/tiny_model.h"
#include "gtest/gtest.h"
#include "kernels/dtype.h"
#include "kernels/safetensors.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::model {
namespace {

// E4M3 by the OCP spec, written apart from kernels/dtype.cc: s.eeee.mmm.
double SpecE4m3(uint8_t code) {
  const int e = (code >> 3) & 15, m = code & 7;
  const double v = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, e - 7);
  return (code & 0x80) ? -v : v;
}

std::string TmpDir(const std::string& name) { return JoinPath(std::getenv("TEST_TMPDIR"), name); }

// The FP8 checkpoint in `from` dequantised offline into F32 tensors in `to` (no scales, no
// quantization_config): what a user converting the checkpoint first would load.
void DequantizeOffline(const std::string& from, const std::string& to) {
  auto ckpt = kernels::Checkpoint::Open(from);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  nlohmann::json config = nlohmann::json::parse(*ReadFile(JoinPath(from, "config.json")));
  const std::vector<int> block = config["quantization_config"]["weight_block_size"];
  config.erase("quantization_config");
  kernels::SafetensorsWriter out;
  int fp8 = 0;
  for (const std::string& name : (*ckpt)->TensorNames()) {
    if (absl::EndsWith(name, "_scale_inv")) continue;
    auto t = (*ckpt)->View(name);
    ASSERT_TRUE(t.ok()) << t.status();
    std::vector<int64_t> shape(t->shape().begin(), t->shape().end());
    if (t->dtype() != kernels::DType::kF8E4M3) {
      ASSERT_TRUE(out.Add(name, t->dtype(), shape,
                          std::string(static_cast<const char*>(t->raw_data()), t->nbytes()))
                      .ok());
      continue;
    }
    ++fp8;
    auto scale = (*ckpt)->ReadF32(name + "_scale_inv");
    ASSERT_TRUE(scale.ok()) << scale.status();
    const int64_t rows = shape[0], cols = shape[1];
    const int64_t scale_cols = (cols + block[1] - 1) / block[1];
    ASSERT_EQ(scale->numel(), ((rows + block[0] - 1) / block[0]) * scale_cols) << name;
    const auto* codes = static_cast<const uint8_t*>(t->raw_data());
    std::vector<float> w(rows * cols);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        const float s = scale->data<float>()[(i / block[0]) * scale_cols + j / block[1]];
        w[i * cols + j] = static_cast<float>(SpecE4m3(codes[i * cols + j])) * s;
      }
    }
    ASSERT_TRUE(out.AddF32(name, kernels::DType::kF32, shape, std::move(w)).ok());
  }
  EXPECT_GT(fp8, 10);
  ASSERT_EQ(std::system(("mkdir -p " + to + " && cp " + from + "/tok*.json " + from +
                         "/generation_config.json " + to)
                            .c_str()),
            0);
  ASSERT_TRUE(WriteFileAtomically(JoinPath(to, "model.safetensors"), out.Serialize()).ok());
  ASSERT_TRUE(WriteFileAtomically(JoinPath(to, "config.json"), config.dump(2)).ok());
}

Eigen::MatrixXf LastLogits(const Model& model, const std::vector<int32_t>& ids) {
  auto cpu = forward::testing::PagedCpuForward::Create(model.config, *model.weights, 16);
  EXPECT_TRUE(cpu.ok()) << cpu.status();
  auto seq = (*cpu)->NewSequence(static_cast<int>(ids.size()));
  EXPECT_TRUE(seq.ok()) << seq.status();
  SequenceInput paged{ids, 0, seq->get(), LogitsMode::kAll};
  auto out = (*cpu)->forward().Forward({&paged, 1});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? Eigen::MatrixXf(out->logits) : Eigen::MatrixXf();
}

struct Fp8Case {
  std::string name;
  ::semmoe::testing::TinyModelOptions options;
};

class Fp8CheckpointTest : public ::testing::TestWithParam<Fp8Case> {};

TEST_P(Fp8CheckpointTest, LoadsAsTheModelDequantisedOffline) {
  const std::string fp8 = TmpDir(GetParam().name), plain = TmpDir(GetParam().name + "_f32");
  ASSERT_TRUE(::semmoe::testing::WriteTinyModel(GetParam().options, fp8).ok());
  DequantizeOffline(fp8, plain);
  auto a = LoadModel(fp8, {.require_tokenizer = true});
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = LoadModel(plain, {.require_tokenizer = true});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE((*a)->config.fp8.enabled());
  EXPECT_FALSE((*b)->config.fp8.enabled());
  const ModelWeights &wa = *(*a)->weights, &wb = *(*b)->weights;
  for (size_t l = 0; l < wa.layers.size(); ++l) {
    const LayerWeights &x = wa.layers[l], &y = wb.layers[l];
    EXPECT_EQ(x.o.w, y.o.w) << "layer " << l;
    EXPECT_EQ(x.q.w, y.q.w) << "layer " << l;
    EXPECT_EQ(x.mla.kv_a.w, y.mla.kv_a.w) << "layer " << l;
    for (size_t e = 0; e < x.experts.size(); ++e) {
      EXPECT_EQ(x.experts[e].down.w, y.experts[e].down.w) << "layer " << l << " expert " << e;
    }
  }
  auto ids = (*a)->tokenizer->Encode("Experts in FP8, dequantised at load.\n");
  ASSERT_TRUE(ids.ok());
  const Eigen::MatrixXf la = LastLogits(**a, *ids), lb = LastLogits(**b, *ids);
  ASSERT_GT(la.size(), 0);
  EXPECT_GT(la.norm(), 1.0f);
  EXPECT_EQ(la, lb) << "the logits of every position, bit for bit";

  // Loaded FP8-only (the FP8 device forward's load): the same codes and scales, no f32 copy;
  // the CPU forward refuses such weights.
  ModelOptions fp8_only;
  fp8_only.load.fp8_in_memory = true;
  auto c = LoadModel(fp8, fp8_only);
  ASSERT_TRUE(c.ok()) << c.status();
  const ModelWeights& wc = *(*c)->weights;
  EXPECT_TRUE(HasFp8OnlyWeights(wc));
  EXPECT_FALSE(HasFp8OnlyWeights(wa));
  const LinearWeight &full = wa.layers.back().experts[1].down,
                     &only = wc.layers.back().experts[1].down;
  EXPECT_TRUE(only.fp8_only());
  EXPECT_TRUE(full.fp8.empty());  // The CPU's load keeps the dequantised values only.
  EXPECT_EQ(only.rows(), full.rows());
  EXPECT_EQ(only.cols(), full.cols());
  // The codes as the file has them; decoded and scaled, the CPU's values.
  for (int64_t i = 0; i < only.rows(); ++i) {
    for (int64_t j = 0; j < only.cols(); ++j) {
      const float scale =
          only.fp8.scales[(i / only.fp8.block_rows) *
                              ((only.cols() + only.fp8.block_cols - 1) / only.fp8.block_cols) +
                          j / only.fp8.block_cols];
      ASSERT_EQ(kernels::F8E4M3ToF32(kernels::F8E4M3{only.fp8.codes[i * only.cols() + j]}) * scale,
                full.w(i, j))
          << i << "," << j;
    }
  }
  EXPECT_FALSE(wc.layers.back().router.size() == 0);  // Not FP8: f32 as ever.
  auto cpu = forward::testing::PagedCpuForward::Create((*c)->config, wc, 16);
  ASSERT_FALSE(cpu.ok());
  EXPECT_NE(cpu.status().message().find("loaded FP8-only"), std::string::npos) << cpu.status();
}

std::vector<Fp8Case> Cases() {
  std::vector<Fp8Case> cases;
  ::semmoe::testing::TinyModelOptions qwen;
  qwen.fp8_block_rows = 16, qwen.fp8_block_cols = 24;  // 64 / 24: a partial edge block.
  cases.push_back({"qwen3_moe", qwen});
  ::semmoe::testing::TinyModelOptions v3;
  v3.arch = Arch::kDeepseekV3;
  v3.hidden_size = 64, v3.num_heads = 4, v3.num_experts = 8, v3.top_k = 2;
  v3.deepseek.q_lora_rank = 24;  // kv_a_proj_with_mqa: 32 + 8 = 40 rows, partial as DSv3's 576.
  v3.deepseek.n_group = 4, v3.deepseek.topk_group = 2;
  v3.fp8_block_rows = 16, v3.fp8_block_cols = 16;
  cases.push_back({"deepseek_v3", v3});
  ::semmoe::testing::TinyModelOptions published = qwen;
  published.fp8_block_rows = published.fp8_block_cols = 128;  // One partial block a weight.
  cases.push_back({"qwen3_moe_128", published});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, Fp8CheckpointTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Fp8Case>& info) {
                           return info.param.name;
                         });

// The checkpoint in `from` rewritten into `to` by `edit` (name, dtype, shape, bytes; return false
// to drop the tensor), config.json through `config`.
template <typename Edit, typename Config>
void Rewrite(const std::string& from, const std::string& to, Edit edit, Config config) {
  auto ckpt = kernels::Checkpoint::Open(from);
  ASSERT_TRUE(ckpt.ok());
  kernels::SafetensorsWriter w;
  for (const std::string& name : (*ckpt)->TensorNames()) {
    auto t = (*ckpt)->View(name);
    std::string bytes(static_cast<const char*>(t->raw_data()), t->nbytes());
    std::vector<int64_t> shape(t->shape().begin(), t->shape().end());
    kernels::DType dtype = t->dtype();
    if (!edit(name, dtype, shape, bytes)) continue;
    ASSERT_TRUE(w.Add(name, dtype, shape, bytes).ok()) << name;
  }
  ASSERT_EQ(std::system(("mkdir -p " + to + " && cp " + from + "/*.json " + to).c_str()), 0);
  nlohmann::json c = nlohmann::json::parse(*ReadFile(JoinPath(from, "config.json")));
  config(c);
  ASSERT_TRUE(WriteFileAtomically(JoinPath(to, "config.json"), c.dump(2)).ok());
  ASSERT_TRUE(WriteFileAtomically(JoinPath(to, "model.safetensors"), w.Serialize()).ok());
}

TEST(Fp8CheckpointTest, BrokenCheckpointsAreClearErrors) {
  const std::string dir = TmpDir("fp8_base");
  ::semmoe::testing::TinyModelOptions o;
  o.fp8_block_rows = o.fp8_block_cols = 32;
  ASSERT_TRUE(::semmoe::testing::WriteTinyModel(o, dir).ok());
  const std::string target = "model.layers.1.mlp.experts.3.up_proj.weight";
  auto keep = [](nlohmann::json&) {};
  int variant = 0;
  auto expect = [&](auto edit, auto config, const std::string& error) {
    const std::string out = TmpDir(absl::StrCat("fp8_broken", variant++));
    Rewrite(dir, out, edit, config);
    // Dequantised at load (the CPU) and kept FP8 (the FP8 device forward): the same error.
    for (const bool fp8_in_memory : {false, true}) {
      ModelOptions options;
      options.load.fp8_in_memory = fp8_in_memory;
      auto model = LoadModel(out, options);
      ASSERT_FALSE(model.ok()) << error;
      EXPECT_NE(model.status().message().find(error), std::string::npos) << model.status();
    }
  };
  // The scales missing.
  expect([&](const std::string& n, auto&, auto&, auto&) { return n != target + "_scale_inv"; },
         keep,
         "'" + target + "' is F8_E4M3 but its block scales '" + target + "_scale_inv' are missing");
  // The scales of the wrong block count (the config says 16-row blocks: 2 × 2 expected 4 × 2).
  expect([](const std::string&, auto&, auto&, auto&) { return true; },
         [](nlohmann::json& c) {
           c["quantization_config"]["weight_block_size"] = {16, 32};
         },
         "tensor 'model.layers.0.self_attn.q_proj.weight_scale_inv' has shape [2, 2], the config "
         "implies [4, 2]");
  // FP8 tensors without a quantization_config.
  expect([](const std::string&, auto&, auto&, auto&) { return true; },
         [](nlohmann::json& c) { c.erase("quantization_config"); },
         "is F8_E4M3 but config.json has no quantization_config");
  // A NaN code in a weight; a non-finite scale.
  expect(
      [&](const std::string& n, auto&, auto&, std::string& bytes) {
        if (n == target) bytes[5] = static_cast<char>(0x7F);
        return true;
      },
      keep, "'" + target + "' holds a NaN");
  expect(
      [&](const std::string& n, auto&, auto&, std::string& bytes) {
        if (n == target + "_scale_inv") {
          const float inf = INFINITY;
          std::memcpy(bytes.data(), &inf, 4);
        }
        return true;
      },
      keep, "'" + target + "_scale_inv' holds a non-finite scale");
  // Zero, negative, denormal and huge scales: each named, with its block.
  for (const auto& [value, says] : std::vector<std::pair<float, std::string>>{
           {0.0f, "is 0, not positive"},
           {-0.5f, "is -0.5, not positive"},
           {std::numeric_limits<float>::min() / 2, "is 5.87747e-39, denormal"},
           {1e36f, "is 1e+36: the largest E4M3 code (448) times it overflows a float"}}) {
    expect(
        [&, value = value](const std::string& n, auto&, auto&, std::string& bytes) {
          if (n == target + "_scale_inv") std::memcpy(bytes.data(), &value, 4);
          return true;
        },
        keep, "'" + target + "_scale_inv': the scale of block (0, 0) " + says);
  }
}

}  // namespace
}  // namespace semmoe::engine::model
