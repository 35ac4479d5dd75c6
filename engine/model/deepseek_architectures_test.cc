// deepseek_v2 / deepseek_v3 across their configuration space (q LoRA on and off, YaRN on and off,
// greedy, group-limited and noaux_tc routing, both normalisation rules, any number of dense
// layers, interleaved or half RoPE), from make_tiny_model checkpoints, against a naive float64
// forward written from DeepSeek's released modelling code: one token at a time, per-head K/V
// expanded from the latent, complex-number RoPE, −inf group masking, the config read from
// config.json by itself. Independent of the product's forward (engine/forward).
#include <cmath>
#include <complex>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "engine/forward/testing/paged_cpu_forward.h"
#include "engine/model/model.h"
#include "engine/model/testing/naive_checkpoint.h"
#include "engine/model/testing/tiny_model.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::model {
namespace {

using testing::Vec;

double Mscale(double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1; }

class NaiveDeepseek {
 public:
  NaiveDeepseek(const nlohmann::json& config, const kernels::Checkpoint& ckpt)
      : j_(config), n_(ckpt) {
    v3_ = j_["model_type"] == "deepseek_v3";
    heads_ = j_["num_attention_heads"];
    dn_ = j_["qk_nope_head_dim"];
    dr_ = j_["qk_rope_head_dim"];
    dv_ = j_["v_head_dim"];
    r_ = j_["kv_lora_rank"];
    lora_ = j_["q_lora_rank"].is_number() && j_["q_lora_rank"].get<int>() > 0;
    interleave_ = j_.value("rope_interleave", true);
    const double base = j_["rope_theta"];
    scale_ = 1.0 / std::sqrt(static_cast<double>(dn_ + dr_));
    for (int i = 0; i < dr_ / 2; ++i) inv_freq_.push_back(std::pow(base, -2.0 * i / dr_));
    if (j_["rope_scaling"].is_object()) {  // YaRN.
      const auto& rs = j_["rope_scaling"];
      const double f = rs["factor"], orig = rs["original_max_position_embeddings"];
      const double mscale = rs.value("mscale", 1.0), all = rs.value("mscale_all_dim", 0.0);
      auto dim_of = [&](double rot) {
        return dr_ * std::log(orig / (rot * 2 * M_PI)) / (2 * std::log(base));
      };
      const double lo = std::max(0.0, std::floor(dim_of(rs.value("beta_fast", 32.0))));
      const double hi = std::min(dr_ - 1.0, std::ceil(dim_of(rs.value("beta_slow", 1.0))));
      for (int i = 0; i < dr_ / 2; ++i) {
        const double ramp = std::clamp((i - lo) / std::max(hi - lo, 1e-3), 0.0, 1.0);
        inv_freq_[i] = inv_freq_[i] * (1 - ramp) + inv_freq_[i] / f * ramp;
      }
      rope_factor_ = Mscale(f, mscale) / Mscale(f, all);
      if (all != 0) scale_ *= Mscale(f, all) * Mscale(f, all);
    }
  }

  // Final-position logits for `ids` (positions 0..n-1).
  Vec Forward(const std::vector<int32_t>& ids) {
    const int n = static_cast<int>(ids.size());
    const int layers = j_["num_hidden_layers"];
    std::vector<Vec> x(n);
    for (int t = 0; t < n; ++t) x[t] = Row("model.embed_tokens.weight", ids[t]);
    for (int l = 0; l < layers; ++l) {
      const std::string p = absl::StrCat("model.layers.", l, ".");
      const std::string a = p + "self_attn.";
      // Per token and head: the query, the key, the value (K/V expanded from the latent).
      std::vector<std::vector<Vec>> q(n), k(n), v(n);
      for (int t = 0; t < n; ++t) {
        Vec h = Rms(x[t], p + "input_layernorm.weight", j_["rms_norm_eps"]);
        Vec qa = lora_ ? Linear(Rms(Linear(h, a + "q_a_proj"), a + "q_a_layernorm.weight", 1e-6),
                                a + "q_b_proj")
                       : Linear(h, a + "q_proj");
        Vec c = Linear(h, a + "kv_a_proj_with_mqa");
        Vec latent(c.begin(), c.begin() + r_), k_rope(c.begin() + r_, c.end());
        Rotate(k_rope, t);
        Vec kv = Linear(Rms(latent, a + "kv_a_layernorm.weight", 1e-6), a + "kv_b_proj");
        for (int hh = 0; hh < heads_; ++hh) {
          const double* qh = qa.data() + hh * (dn_ + dr_);
          Vec q_rope(qh + dn_, qh + dn_ + dr_);
          Rotate(q_rope, t);
          Vec qq(qh, qh + dn_),
              kk(kv.data() + hh * (dn_ + dv_), kv.data() + hh * (dn_ + dv_) + dn_);
          qq.insert(qq.end(), q_rope.begin(), q_rope.end());
          kk.insert(kk.end(), k_rope.begin(), k_rope.end());
          q[t].push_back(qq);
          k[t].push_back(kk);
          v[t].emplace_back(kv.data() + hh * (dn_ + dv_) + dn_, kv.data() + (hh + 1) * (dn_ + dv_));
        }
      }
      for (int t = 0; t < n; ++t) {
        Vec attn;
        for (int hh = 0; hh < heads_; ++hh) {
          Vec scores(t + 1), out(dv_, 0.0);
          for (int s = 0; s <= t; ++s) {
            scores[s] =
                std::inner_product(q[t][hh].begin(), q[t][hh].end(), k[s][hh].begin(), 0.0) *
                scale_;
          }
          Softmax(scores);
          for (int s = 0; s <= t; ++s) {
            for (int i = 0; i < dv_; ++i) out[i] += scores[s] * v[s][hh][i];
          }
          attn.insert(attn.end(), out.begin(), out.end());
        }
        Add(x[t], Linear(attn, a + "o_proj"));
      }
      const int first_dense = j_.value("first_k_dense_replace", 0);
      const bool moe = l >= first_dense && l % j_.value("moe_layer_freq", 1) == 0;
      for (int t = 0; t < n; ++t) {
        Vec h = Rms(x[t], p + "post_attention_layernorm.weight", j_["rms_norm_eps"]);
        Add(x[t], moe ? Moe(h, p + "mlp.") : Mlp(h, p + "mlp."));
      }
    }
    const std::string head = "lm_head";
    return Linear(Rms(x[n - 1], "model.norm.weight", j_["rms_norm_eps"]), head);
  }

 private:
  // RoPE as a complex multiply of the pairs (interleaved: (2i, 2i+1); else (i, i + d/2)),
  // scaled by YaRN's attention factor.
  void Rotate(Vec& x, int pos) const {
    const int half = dr_ / 2;
    for (int i = 0; i < half; ++i) {
      const int a = interleave_ ? 2 * i : i, b = interleave_ ? 2 * i + 1 : i + half;
      std::complex<double> z(x[a], x[b]);
      z *= std::polar(rope_factor_, pos * inv_freq_[i]);
      x[a] = z.real();
      x[b] = z.imag();
    }
  }

  Vec Moe(const Vec& h, const std::string& block) {
    const int experts = j_["n_routed_experts"], k = j_["num_experts_per_tok"];
    const std::string scoring = j_.value("scoring_func", v3_ ? "sigmoid" : "softmax");
    const std::string method = j_.value("topk_method", v3_ ? "noaux_tc" : "greedy");
    const int groups = j_.value("n_group", 1), keep = j_.value("topk_group", 1);
    Vec s = Linear(h, block + "gate");
    if (scoring == "softmax") {
      Softmax(s);
    } else {
      for (double& z : s) z = 1 / (1 + std::exp(-z));
    }
    Vec choice = s;
    if (method == "noaux_tc") {
      const auto& bias = T(block + "gate.e_score_correction_bias");
      for (int e = 0; e < experts; ++e) choice[e] += bias[e];
    }
    if (method != "greedy" && groups > 1) {
      const int size = experts / groups;
      std::vector<std::pair<double, int>> group_scores;
      for (int g = 0; g < groups; ++g) {
        Vec members(choice.begin() + g * size, choice.begin() + (g + 1) * size);
        std::sort(members.rbegin(), members.rend());
        group_scores.push_back({method == "noaux_tc" ? members[0] + members[1] : members[0], -g});
      }
      std::sort(group_scores.rbegin(), group_scores.rend());
      std::vector<bool> kept(groups, false);
      for (int i = 0; i < keep; ++i) kept[-group_scores[i].second] = true;
      for (int e = 0; e < experts; ++e) {
        if (!kept[e / size]) choice[e] = -INFINITY;
      }
    }
    std::vector<int> order(experts);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return choice[a] > choice[b]; });
    double sum = 0;
    for (int i = 0; i < k; ++i) sum += s[order[i]];
    const bool norm = k > 1 && j_.value("norm_topk_prob", false);
    const double factor = j_.value("routed_scaling_factor", 1.0);
    Vec out(h.size(), 0.0);
    for (int i = 0; i < k; ++i) {
      double w = s[order[i]];
      // DeepSeek-V3: normalise, then always scale. DeepSeek-V2: normalise, or else scale.
      if (v3_) {
        w = (norm ? w / (sum + 1e-20) : w) * factor;
      } else {
        w = norm ? w / (sum + 1e-20) : w * factor;
      }
      Vec y = Mlp(h, absl::StrCat(block, "experts.", order[i], "."));
      for (size_t d = 0; d < out.size(); ++d) out[d] += w * y[d];
    }
    if (j_.value("n_shared_experts", 0) > 0) Add(out, Mlp(h, block + "shared_experts."));
    return out;
  }

  const std::vector<float>& T(const std::string& name) { return n_.T(name); }
  Vec Row(const std::string& name, int row) { return n_.Row(name, row, j_["hidden_size"]); }
  Vec Linear(const Vec& x, const std::string& prefix) { return n_.Linear(x, prefix); }
  Vec Rms(const Vec& x, const std::string& weight, double eps) { return n_.Rms(x, weight, eps); }
  Vec Mlp(const Vec& h, const std::string& prefix) { return n_.Mlp(h, prefix); }
  static void Softmax(Vec& v) { testing::NaiveCheckpoint::Softmax(v); }
  static void Add(Vec& a, const Vec& b) { testing::NaiveCheckpoint::Add(a, b); }

  const nlohmann::json& j_;
  testing::NaiveCheckpoint n_;
  bool v3_ = false, lora_ = false, interleave_ = true;
  int heads_ = 0, dn_ = 0, dr_ = 0, dv_ = 0, r_ = 0;
  double scale_ = 0, rope_factor_ = 1.0;
  Vec inv_freq_;
};

struct Variant {
  std::string name;
  ::semmoe::testing::TinyModelOptions options;
};
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

std::vector<Variant> Variants() {
  using Arch = engine::model::Arch;
  std::vector<Variant> out;
  ::semmoe::testing::TinyModelOptions base;
  base.hidden_size = 48;
  base.num_layers = 3;
  base.num_heads = 4;
  base.num_experts = 8;
  base.top_k = 2;
  base.max_position_embeddings = 256;
  base.init_std = 0.1f;
  // The fixture's shape: plain q_proj, YaRN, group-limited softmax, raw probabilities.
  ::semmoe::testing::TinyModelOptions v2 = base;
  v2.arch = Arch::kDeepseekV2;
  v2.norm_topk_prob = false;
  v2.deepseek.yarn = true;
  v2.seed = 11;
  out.push_back({"v2_group_limited_yarn", v2});
  // DeepSeek-V2-Lite's: greedy, no dense layer, two shared experts; and norm_topk_prob with a
  // scaling factor (V2's rule: normalised weights are not scaled).
  ::semmoe::testing::TinyModelOptions lite = base;
  lite.arch = Arch::kDeepseekV2;
  lite.deepseek.topk_method = "greedy";
  lite.deepseek.first_k_dense_replace = 0;
  lite.deepseek.n_shared_experts = 2;
  lite.deepseek.routed_scaling_factor = 16;
  lite.norm_topk_prob = true;
  lite.seed = 12;
  out.push_back({"v2_greedy_normalised_scaled", lite});
  ::semmoe::testing::TinyModelOptions raw = lite;
  raw.norm_topk_prob = false;  // V2: unnormalised weights are scaled.
  raw.deepseek.routed_scaling_factor = 2;
  raw.dtype = kernels::DType::kF32;
  raw.seed = 13;
  out.push_back({"v2_greedy_scaled_f32", raw});
  // The V3 fixture's shape: q LoRA, noaux_tc with a bias, normalised then × 2.5.
  ::semmoe::testing::TinyModelOptions v3 = base;
  v3.arch = Arch::kDeepseekV3;
  v3.deepseek.q_lora_rank = 24;
  v3.deepseek.routed_scaling_factor = 2.5;
  v3.norm_topk_prob = true;
  v3.seed = 14;
  out.push_back({"v3_noaux_tc_q_lora", v3});
  // V3 with two dense layers and MoE every other layer, YaRN, half-split RoPE, no q LoRA,
  // group-limited sigmoid without normalisation.
  ::semmoe::testing::TinyModelOptions v3b = base;
  v3b.arch = Arch::kDeepseekV3;
  v3b.num_layers = 5;
  v3b.deepseek.first_k_dense_replace = 2;
  v3b.deepseek.moe_layer_freq = 2;
  v3b.deepseek.yarn = true;
  v3b.deepseek.rope_interleave = false;
  v3b.deepseek.topk_method = "group_limited_greedy";
  v3b.deepseek.routed_scaling_factor = 1.5;
  v3b.norm_topk_prob = false;
  v3b.seed = 15;
  out.push_back({"v3_dense_layers_yarn_half_rope", v3b});
  return out;
}

class DeepseekArchitecturesTest : public ::testing::TestWithParam<Variant> {};

double RelL2(const Eigen::RowVectorXf& ours, const Vec& expected) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff += (ours[i] - expected[i]) * (ours[i] - expected[i]);
    norm += expected[i] * expected[i];
  }
  EXPECT_GT(norm, 1.0);  // Logits are not trivially zero.
  return std::sqrt(diff / norm);
}

using ForwardFn = std::function<absl::StatusOr<ForwardOutput>(absl::Span<const SequenceInput>)>;
using NewSequence = std::function<std::unique_ptr<KvSequence>(int capacity)>;

// A prefill (latent expanded through kv_b) and a prefill followed by decode steps (kv_b
// absorbed) through `forward` both match the naive forward.
void ExpectNaive(NaiveDeepseek& naive, const std::vector<int32_t>& ids, const ForwardFn& forward,
                 const NewSequence& new_sequence) {
  std::unique_ptr<KvSequence> kv = new_sequence(ids.size());
  SequenceInput in{ids, 0, kv.get(), LogitsMode::kLast};
  auto out = forward({&in, 1});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_LT(RelL2(out->logits.row(0), naive.Forward(ids)), 1e-5) << "prefill";

  std::unique_ptr<KvSequence> kv2 = new_sequence(ids.size());
  const int prefix = static_cast<int>(ids.size()) - 3;
  SequenceInput first{absl::MakeConstSpan(ids).subspan(0, prefix), 0, kv2.get(), LogitsMode::kNone};
  ASSERT_TRUE(forward({&first, 1}).ok());
  for (int p = prefix; p < static_cast<int>(ids.size()); ++p) {
    SequenceInput step{absl::MakeConstSpan(ids).subspan(p, 1), p, kv2.get(), LogitsMode::kLast};
    auto decoded = forward({&step, 1});
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    const std::vector<int32_t> seen(ids.begin(), ids.begin() + p + 1);
    EXPECT_LT(RelL2(decoded->logits.row(0), naive.Forward(seen)), 1e-5) << "decode at " << p;
  }
}

// On the product's op-set forward (engine/forward/cpu_forward.h: MLA's expanded form for the
// prompt, its absorbed form for the decode steps).
TEST_P(DeepseekArchitecturesTest, MatchesNaiveFloat64ForwardInPrefillAndDecode) {
  const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), GetParam().name);
  ASSERT_TRUE(::semmoe::testing::WriteTinyModel(GetParam().options, dir).ok());
  auto model = LoadModel(dir, {.require_tokenizer = true});
  ASSERT_TRUE(model.ok()) << model.status();
  auto ckpt = kernels::Checkpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok());
  const nlohmann::json config = nlohmann::json::parse(*ReadFile(JoinPath(dir, "config.json")));
  NaiveDeepseek naive(config, **ckpt);
  auto ids = (*model)->tokenizer->Encode("The experts live on the same device.\n");
  ASSERT_TRUE(ids.ok());
  ASSERT_GT(ids->size(), 8u);
  const ModelConfig& c = (*model)->config;
  auto cpu = forward::testing::PagedCpuForward::Create(c, *(*model)->weights, /*num_pages=*/32);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ExpectNaive(
      naive, *ids, [&](absl::Span<const SequenceInput> b) { return (*cpu)->forward().Forward(b); },
      [&](int capacity) -> std::unique_ptr<KvSequence> {
        auto seq = (*cpu)->NewSequence(capacity);
        EXPECT_TRUE(seq.ok()) << seq.status();
        return seq.ok() ? std::move(*seq) : nullptr;
      });
}

INSTANTIATE_TEST_SUITE_P(All, DeepseekArchitecturesTest, ::testing::ValuesIn(Variants()),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace semmoe::engine::model
