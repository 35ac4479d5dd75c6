// Every supported architecture, from make_tiny_model checkpoints, against a naive float64
// implementation written straight from the Hugging Face modelling code (one token at a time,
// no KV cache, no batching, tensors read by name) — independent of the product's forward
// (engine/forward), which it holds to 1e-5.
#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "engine/forward/testing/paged_cpu_forward.h"
#include "engine/model/model.h"
#include "engine/model/testing/naive_checkpoint.h"
#include "engine/model/testing/tiny_model.h"
#include "gtest/gtest.h"

namespace semmoe::engine::model {
namespace {

using testing::Vec;

class Naive {
 public:
  Naive(const ModelConfig& c, const kernels::Checkpoint& ckpt) : c_(c), ckpt_(ckpt) {}

  // Final-position logits for `ids` (positions 0..n-1).
  Vec Forward(const std::vector<int32_t>& ids) {
    const int n = static_cast<int>(ids.size());
    std::vector<Vec> x(n);
    for (int t = 0; t < n; ++t) x[t] = Row("model.embed_tokens.weight", ids[t]);
    for (int l = 0; l < c_.num_layers; ++l) {
      const std::string p = absl::StrCat("model.layers.", l, ".");
      std::vector<Vec> q(n), k(n), v(n);
      for (int t = 0; t < n; ++t) {
        Vec h = Rms(x[t], p + "input_layernorm.weight");
        q[t] = Linear(h, p + "self_attn.q_proj");
        k[t] = Linear(h, p + "self_attn.k_proj");
        v[t] = Linear(h, p + "self_attn.v_proj");
        if (c_.qk_norm) {
          HeadRms(q[t], p + "self_attn.q_norm.weight");
          HeadRms(k[t], p + "self_attn.k_norm.weight");
        }
        Rope(q[t], t);
        Rope(k[t], t);
      }
      const int d = c_.head_dim, group = c_.num_heads / c_.num_kv_heads;
      for (int t = 0; t < n; ++t) {
        Vec attn(c_.num_heads * d, 0.0);
        for (int hh = 0; hh < c_.num_heads; ++hh) {
          const int kv = hh / group;
          Vec scores(t + 1);
          for (int s = 0; s <= t; ++s) {
            double dot = 0;
            for (int i = 0; i < d; ++i) dot += q[t][hh * d + i] * k[s][kv * d + i];
            scores[s] = dot / std::sqrt(static_cast<double>(d));
          }
          SoftmaxInPlace(scores);
          for (int s = 0; s <= t; ++s) {
            for (int i = 0; i < d; ++i) attn[hh * d + i] += scores[s] * v[s][kv * d + i];
          }
        }
        Add(x[t], Linear(attn, p + "self_attn.o_proj"));
      }
      for (int t = 0; t < n; ++t) {
        Vec h = Rms(x[t], p + "post_attention_layernorm.weight");
        Add(x[t], c_.IsMoeLayer(l) ? Moe(h, l, p)
                                   : Mlp(h, p + "mlp.", "gate_proj", "up_proj", "down_proj"));
      }
    }
    Vec last = Rms(x[n - 1], "model.norm.weight");
    const std::string head = c_.tie_word_embeddings && !ckpt_.Info("lm_head.weight").ok()
                                 ? "model.embed_tokens"
                                 : "lm_head";
    return Linear(last, head);
  }

 private:
  Vec Row(const std::string& name, int row) { return n_.Row(name, row, c_.hidden_size); }
  Vec Linear(const Vec& x, const std::string& prefix) { return n_.Linear(x, prefix); }
  Vec Rms(const Vec& x, const std::string& weight) { return n_.Rms(x, weight, c_.rms_norm_eps); }
  void HeadRms(Vec& x, const std::string& weight) {
    const int d = c_.head_dim;
    for (size_t h = 0; h < x.size() / d; ++h) {
      Vec head(x.begin() + h * d, x.begin() + (h + 1) * d);
      head = Rms(head, weight);
      std::copy(head.begin(), head.end(), x.begin() + h * d);
    }
  }
  void Rope(Vec& x, int pos) {
    const int d = c_.head_dim, half = d / 2;
    for (size_t h = 0; h < x.size() / d; ++h) {
      double* v = x.data() + h * d;
      for (int i = 0; i < half; ++i) {
        const double angle = pos * std::pow(c_.rope_theta, -2.0 * i / d);
        const double a = v[i], b = v[i + half];
        v[i] = a * std::cos(angle) - b * std::sin(angle);
        v[i + half] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
  }
  static void SoftmaxInPlace(Vec& v) { testing::NaiveCheckpoint::Softmax(v); }
  static void Add(Vec& a, const Vec& b) { testing::NaiveCheckpoint::Add(a, b); }
  Vec Mlp(const Vec& h, const std::string& prefix, const std::string& gate, const std::string& up,
          const std::string& down) {
    return n_.Mlp(h, prefix, gate, up, down);
  }
  Vec Moe(const Vec& h, int layer, const std::string& p) {
    const bool mixtral = c_.arch == Arch::kMixtral;
    const std::string block = p + (mixtral ? "block_sparse_moe." : "mlp.");
    Vec probs = Linear(h, block + "gate");
    SoftmaxInPlace(probs);
    std::vector<int> order(probs.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return probs[a] > probs[b]; });
    double sum = 0;
    for (int j = 0; j < c_.top_k; ++j) sum += probs[order[j]];
    Vec out(h.size(), 0.0);
    for (int j = 0; j < c_.top_k; ++j) {
      const int e = order[j];
      const double w = c_.norm_topk_prob ? probs[e] / sum : probs[e];
      const std::string ep = absl::StrCat(block, "experts.", e, ".");
      Vec y =
          mixtral ? Mlp(h, ep, "w1", "w3", "w2") : Mlp(h, ep, "gate_proj", "up_proj", "down_proj");
      for (size_t i = 0; i < out.size(); ++i) out[i] += w * y[i];
    }
    if (c_.arch == Arch::kQwen2Moe) {
      Vec y = Mlp(h, block + "shared_expert.", "gate_proj", "up_proj", "down_proj");
      const double g = 1.0 / (1.0 + std::exp(-Linear(h, block + "shared_expert_gate")[0]));
      for (size_t i = 0; i < out.size(); ++i) out[i] += g * y[i];
    }
    return out;
  }

  const ModelConfig& c_;
  const kernels::Checkpoint& ckpt_;
  testing::NaiveCheckpoint n_{ckpt_};
};

struct ArchCase {
  std::string name;
  ::semmoe::testing::TinyModelOptions options;
};

void PrintTo(const ArchCase& c, std::ostream* os) { *os << c.name; }

std::vector<ArchCase> Cases() {
  std::vector<ArchCase> cases;
  ::semmoe::testing::TinyModelOptions q3;
  q3.arch = Arch::kQwen3Moe;
  q3.head_dim = 24;  // heads × head_dim (96) ≠ hidden (64), as in Qwen3-30B-A3B.
  q3.seed = 1;
  cases.push_back({"qwen3_moe", q3});
  ::semmoe::testing::TinyModelOptions q3_dense = q3;
  q3_dense.num_layers = 3;
  q3_dense.mlp_only_layers = {1};
  q3_dense.norm_topk_prob = false;
  q3_dense.tie_word_embeddings = true;
  q3_dense.dtype = kernels::DType::kF32;
  q3_dense.seed = 2;
  cases.push_back({"qwen3_moe_dense_layer_tied_f32", q3_dense});
  ::semmoe::testing::TinyModelOptions q2;
  q2.arch = Arch::kQwen2Moe;
  q2.num_kv_heads = 4;
  q2.norm_topk_prob = false;
  q2.seed = 3;
  cases.push_back({"qwen2_moe", q2});
  ::semmoe::testing::TinyModelOptions mx;
  mx.arch = Arch::kMixtral;
  mx.num_experts = 4;
  mx.dtype = kernels::DType::kF16;
  mx.num_shards = 3;
  mx.seed = 4;
  cases.push_back({"mixtral_f16_sharded", mx});
  return cases;
}

class ArchitecturesTest : public ::testing::TestWithParam<ArchCase> {};

TEST_P(ArchitecturesTest, MatchesNaiveFloat64Forward) {
  const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), GetParam().name);
  ASSERT_TRUE(::semmoe::testing::WriteTinyModel(GetParam().options, dir).ok());
  auto model = LoadModel(dir, {.require_tokenizer = true});
  ASSERT_TRUE(model.ok()) << model.status();
  auto ckpt = kernels::Checkpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok());
  Naive naive((*model)->config, **ckpt);

  auto ids = (*model)->tokenizer->Encode("The experts live on the same device.\n");
  ASSERT_TRUE(ids.ok());
  ASSERT_GT(ids->size(), 5u);
  EXPECT_EQ(*(*model)->tokenizer->Decode(*ids), "The experts live on the same device.\n");

  const Vec expected = naive.Forward(*ids);
  auto expect_naive = [&](const absl::StatusOr<ForwardOutput>& out, const std::string& what) {
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(static_cast<int64_t>(expected.size()), out->logits.cols());
    double diff = 0, norm = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      diff += (out->logits(0, i) - expected[i]) * (out->logits(0, i) - expected[i]);
      norm += expected[i] * expected[i];
    }
    EXPECT_GT(norm, 1.0);  // Logits are not trivially zero.
    EXPECT_LT(std::sqrt(diff / norm), 1e-5) << GetParam().name << " on " << what;
  };
  const ModelConfig& c = (*model)->config;
  // The product's op-set forward (engine/forward/cpu_forward.h) over a paged arena.
  auto cpu = forward::testing::PagedCpuForward::Create(c, *(*model)->weights, /*num_pages=*/16);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto seq = (*cpu)->NewSequence(static_cast<int>(ids->size()));
  ASSERT_TRUE(seq.ok()) << seq.status();
  SequenceInput paged{*ids, 0, seq->get(), LogitsMode::kLast};
  expect_naive((*cpu)->forward().Forward({&paged, 1}), "the op-set forward");
}

INSTANTIATE_TEST_SUITE_P(All, ArchitecturesTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<ArchCase>& info) {
                           return info.param.name;
                         });

TEST(LoadModelTest, MissingAndMisshapenTensorsAreClearErrors) {
  const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), "broken");
  ::semmoe::testing::TinyModelOptions o;
  ASSERT_TRUE(::semmoe::testing::WriteTinyModel(o, dir).ok());
  // Rewrite the checkpoint without one expert tensor, then with a wrong shape.
  auto ckpt = kernels::Checkpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok());
  for (int variant = 0; variant < 2; ++variant) {
    kernels::SafetensorsWriter w;
    for (const std::string& name : (*ckpt)->TensorNames()) {
      auto t = (*ckpt)->View(name);
      std::string bytes(static_cast<const char*>(t->raw_data()), t->nbytes());
      std::vector<int64_t> shape(t->shape().begin(), t->shape().end());
      if (name == "model.layers.1.mlp.experts.3.up_proj.weight") {
        if (variant == 0) continue;
        shape = {shape[1], shape[0]};
      }
      ASSERT_TRUE(w.Add(name, t->dtype(), shape, bytes).ok());
    }
    const std::string out = JoinPath(std::getenv("TEST_TMPDIR"), absl::StrCat("broken", variant));
    std::system(("mkdir -p " + out + " && cp " + dir + "/*.json " + out).c_str());
    ASSERT_TRUE(WriteFileAtomically(JoinPath(out, "model.safetensors"), w.Serialize()).ok());
    auto model = LoadModel(out);
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.status().message().find("model.layers.1.mlp.experts.3.up_proj.weight"),
              std::string::npos)
        << model.status();
    if (variant == 1) {
      EXPECT_NE(model.status().message().find("has shape [64, 32], the config implies [32, 64]"),
                std::string::npos)
          << model.status();
    }
  }
}

TEST(LoadModelTest, MissingDirectoryNamesIt) {
  auto model = LoadModel("/nonexistent/model");
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(model.status().message().find("/nonexistent/model/config.json"), std::string::npos);
}

}  // namespace
}  // namespace semmoe::engine::model
