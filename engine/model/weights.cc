#include "engine/model/weights.h"

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace semmoe::engine::model {
namespace {

class Loader {
 public:
  Loader(const kernels::Checkpoint& checkpoint, const ModelConfig::Fp8& fp8,
         bool fp8_in_memory = false)
      : checkpoint_(checkpoint), fp8_(fp8), fp8_in_memory_(fp8_in_memory) {}

  // F8_E4M3 weights come out dequantised: each value times its block's scale (one f32 product,
  // as `weight.float() * scale_inv` expanded over the blocks). The tensor's mapped pages are
  // given back once copied.
  absl::StatusOr<Matrix> Read(const std::string& name, int64_t rows, int64_t cols) {
    ASSIGN_OR_RETURN(const kernels::TensorInfo* info, checkpoint_.Info(name));
    if (info->shape != std::vector<int64_t>{rows, cols}) {
      return ShapeError(name, info->shape, {rows, cols});
    }
    ASSIGN_OR_RETURN(kernels::Tensor t, checkpoint_.ReadF32(name));
    Matrix m = Eigen::Map<const Matrix>(t.data<float>(), rows, cols);
    checkpoint_.Release(name);
    if (info->dtype == kernels::DType::kF8E4M3) RETURN_IF_ERROR(Dequantize(name, m).status());
    return m;
  }

  absl::StatusOr<LinearWeight> ReadLinear(const std::string& name, int64_t rows, int64_t cols) {
    LinearWeight linear;
    ASSIGN_OR_RETURN(kernels::Tensor view, checkpoint_.View(name));
    if (fp8_in_memory_ && view.dtype() == kernels::DType::kF8E4M3) {
      ASSIGN_OR_RETURN(const kernels::TensorInfo* info, checkpoint_.Info(name));
      if (info->shape != std::vector<int64_t>{rows, cols}) {
        return ShapeError(name, info->shape, {rows, cols});
      }
      ASSIGN_OR_RETURN(linear.fp8, ReadFp8(name, rows, cols));
      return linear;
    }
    if (view.dtype() == kernels::DType::kBF16) {  // Before Read gives the pages back.
      const auto* bits = static_cast<const uint16_t*>(view.raw_data());
      linear.bf16.assign(bits, bits + view.numel());
    }
    ASSIGN_OR_RETURN(linear.w, Read(name, rows, cols));
    return linear;
  }

  absl::StatusOr<Vector> ReadVector(const std::string& name, int64_t size) {
    ASSIGN_OR_RETURN(const kernels::TensorInfo* info, checkpoint_.Info(name));
    if (info->shape != std::vector<int64_t>{size}) return ShapeError(name, info->shape, {size});
    if (info->dtype == kernels::DType::kF8E4M3) {
      return absl::InvalidArgumentError(absl::StrCat(
          checkpoint_.dir(), ": tensor '", name,
          "' is F8_E4M3: only 2-D weights may be FP8 (block scales are per 2-D block)"));
    }
    ASSIGN_OR_RETURN(kernels::Tensor t, checkpoint_.ReadF32(name));
    checkpoint_.Release(name);
    return Vector(Eigen::Map<const Vector>(t.data<float>(), size));
  }

  absl::StatusOr<MlpWeights> ReadMlp(const std::string& prefix, const std::string& gate,
                                     const std::string& up, const std::string& down, int64_t hidden,
                                     int64_t inter) {
    MlpWeights m;
    ASSIGN_OR_RETURN(m.gate, ReadLinear(prefix + gate + ".weight", inter, hidden));
    ASSIGN_OR_RETURN(m.up, ReadLinear(prefix + up + ".weight", inter, hidden));
    ASSIGN_OR_RETURN(m.down, ReadLinear(prefix + down + ".weight", hidden, inter));
    return m;
  }

 private:
  // An F8_E4M3 weight as stored: its codes (checked for NaN) and block scales.
  absl::StatusOr<Fp8Weight> ReadFp8(const std::string& name, int64_t rows, int64_t cols) {
    Fp8Weight f{.rows = rows,
                .cols = cols,
                .block_rows = static_cast<int>(fp8_.block_rows),
                .block_cols = static_cast<int>(fp8_.block_cols)};
    ASSIGN_OR_RETURN(Matrix scale, Scales(name, rows, cols));
    f.scales.assign(scale.data(), scale.data() + scale.size());
    ASSIGN_OR_RETURN(kernels::Tensor view, checkpoint_.View(name));
    const auto* codes = static_cast<const uint8_t*>(view.raw_data());
    f.codes.assign(codes, codes + view.numel());
    checkpoint_.Release(name);
    for (uint8_t c : f.codes) {
      if ((c & 0x7F) == 0x7F) return NanCode(name);
    }
    return f;
  }

  absl::Status NanCode(const std::string& name) {
    return absl::InvalidArgumentError(
        absl::StrCat(checkpoint_.dir(), ": tensor '", name, "' holds a NaN (an F8_E4M3 NaN code)"));
  }

  // An F8_E4M3 weight's `_scale_inv` blocks, checked.
  absl::StatusOr<Matrix> Scales(const std::string& name, int64_t rows, int64_t cols) {
    const std::string& dir = checkpoint_.dir();
    if (!fp8_.enabled()) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, ": tensor '", name,
                       "' is F8_E4M3 but config.json has no quantization_config "
                       "(quant_method fp8 with weight_block_size)"));
    }
    const std::string scale_name = name + "_scale_inv";
    if (!checkpoint_.Info(scale_name).ok()) {
      return absl::NotFoundError(absl::StrCat(dir, ": tensor '", name,
                                              "' is F8_E4M3 but its block scales '", scale_name,
                                              "' are missing"));
    }
    const int64_t br = fp8_.block_rows, bc = fp8_.block_cols;
    const int64_t sr = (rows + br - 1) / br, sc = (cols + bc - 1) / bc;
    ASSIGN_OR_RETURN(Matrix scale, Read(scale_name, sr, sc));  // Partial edge blocks included.
    if (!scale.allFinite()) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, ": tensor '", scale_name, "' holds a non-finite scale"));
    }
    // A block scale is a positive normal float, small enough that the largest E4M3 code (448)
    // times it stays finite: zero, negative and denormal scales load as garbage weights, and a
    // huge one overflows to infinity when the block is dequantised (here or on the GPU).
    constexpr float kMaxCode = 448.0f;
    for (int64_t i = 0; i < scale.rows(); ++i) {
      for (int64_t j = 0; j < scale.cols(); ++j) {
        const float v = scale(i, j);
        std::string why;
        if (v <= 0) {
          why = ", not positive: block scales must be positive normal floats";
        } else if (v < std::numeric_limits<float>::min()) {
          why = ", denormal: block scales must be positive normal floats";
        } else if (v > std::numeric_limits<float>::max() / kMaxCode) {
          why = ": the largest E4M3 code (448) times it overflows a float";
        } else {
          continue;
        }
        return absl::InvalidArgumentError(absl::StrCat(
            dir, ": tensor '", scale_name, "': the scale of block (", i, ", ", j, ") is ", v, why));
      }
    }
    return scale;
  }

  // m *= its blocks' scales, which come back.
  absl::StatusOr<Matrix> Dequantize(const std::string& name, Matrix& m) {
    ASSIGN_OR_RETURN(Matrix scale, Scales(name, m.rows(), m.cols()));
    const int64_t br = fp8_.block_rows, bc = fp8_.block_cols;
    for (int64_t i = 0; i < m.rows(); ++i) {
      for (int64_t j = 0; j < m.cols(); ++j) m(i, j) *= scale(i / br, j / bc);
    }
    if (!m.allFinite()) return NanCode(name);  // E4M3 has no infinity: a NaN code.
    return scale;
  }

  absl::Status ShapeError(const std::string& name, const std::vector<int64_t>& got,
                          const std::vector<int64_t>& want) {
    return absl::InvalidArgumentError(absl::StrCat(
        checkpoint_.dir(), ": tensor '", name, "' has shape [", absl::StrJoin(got, ", "),
        "], the config implies [", absl::StrJoin(want, ", "), "]"));
  }

  const kernels::Checkpoint& checkpoint_;
  const ModelConfig::Fp8 fp8_;
  const bool fp8_in_memory_;
};

absl::Status LoadMla(const ModelConfig& c, const std::string& a, Loader& l, LayerWeights& w) {
  const MlaConfig& m = c.mla_dims;
  const int64_t q_rows = c.q_size();
  MlaWeights& mla = w.mla;
  if (m.q_lora_rank > 0) {
    ASSIGN_OR_RETURN(mla.q_a, l.ReadLinear(a + "q_a_proj.weight", m.q_lora_rank, c.hidden_size));
    ASSIGN_OR_RETURN(mla.q_a_norm, l.ReadVector(a + "q_a_layernorm.weight", m.q_lora_rank));
    ASSIGN_OR_RETURN(mla.q_b, l.ReadLinear(a + "q_b_proj.weight", q_rows, m.q_lora_rank));
  } else {
    ASSIGN_OR_RETURN(w.q, l.ReadLinear(a + "q_proj.weight", q_rows, c.hidden_size));
  }
  ASSIGN_OR_RETURN(mla.kv_a, l.ReadLinear(a + "kv_a_proj_with_mqa.weight",
                                          m.kv_lora_rank + m.qk_rope_head_dim, c.hidden_size));
  ASSIGN_OR_RETURN(mla.kv_a_norm, l.ReadVector(a + "kv_a_layernorm.weight", m.kv_lora_rank));
  ASSIGN_OR_RETURN(mla.kv_b, l.ReadLinear(a + "kv_b_proj.weight",
                                          static_cast<int64_t>(c.num_heads) *
                                              (m.qk_nope_head_dim + c.v_head_dim),
                                          m.kv_lora_rank));
  ASSIGN_OR_RETURN(w.o, l.ReadLinear(a + "o_proj.weight", c.hidden_size, c.attn_out_size()));
  return absl::OkStatus();
}

absl::Status LoadAttention(const ModelConfig& c, const std::string& p, Loader& l, LayerWeights& w) {
  ASSIGN_OR_RETURN(w.input_norm, l.ReadVector(p + "input_layernorm.weight", c.hidden_size));
  ASSIGN_OR_RETURN(w.post_attention_norm,
                   l.ReadVector(p + "post_attention_layernorm.weight", c.hidden_size));
  const std::string a = p + "self_attn.";
  if (c.mla) return LoadMla(c, a, l, w);
  ASSIGN_OR_RETURN(w.q, l.ReadLinear(a + "q_proj.weight", c.q_size(), c.hidden_size));
  ASSIGN_OR_RETURN(w.k, l.ReadLinear(a + "k_proj.weight", c.kv_size(), c.hidden_size));
  ASSIGN_OR_RETURN(w.v, l.ReadLinear(a + "v_proj.weight", c.kv_size(), c.hidden_size));
  ASSIGN_OR_RETURN(w.o, l.ReadLinear(a + "o_proj.weight", c.hidden_size, c.q_size()));
  if (c.attention_bias) {
    ASSIGN_OR_RETURN(w.q_bias, l.ReadVector(a + "q_proj.bias", c.q_size()));
    ASSIGN_OR_RETURN(w.k_bias, l.ReadVector(a + "k_proj.bias", c.kv_size()));
    ASSIGN_OR_RETURN(w.v_bias, l.ReadVector(a + "v_proj.bias", c.kv_size()));
  }
  if (c.qk_norm) {
    ASSIGN_OR_RETURN(w.q_norm, l.ReadVector(a + "q_norm.weight", c.head_dim));
    ASSIGN_OR_RETURN(w.k_norm, l.ReadVector(a + "k_norm.weight", c.head_dim));
  }
  return absl::OkStatus();
}

absl::Status LoadFeedForward(const ModelConfig& c, int layer, const std::string& p, Loader& l,
                             const LoadOptions& options, LayerWeights& w) {
  w.is_moe = c.IsMoeLayer(layer);
  if (!w.is_moe) {
    ASSIGN_OR_RETURN(w.dense, l.ReadMlp(p + "mlp.", "gate_proj", "up_proj", "down_proj",
                                        c.hidden_size, c.intermediate_size));
    return absl::OkStatus();
  }
  const std::string block = c.arch == Arch::kMixtral ? p + "block_sparse_moe." : p + "mlp.";
  ASSIGN_OR_RETURN(w.router, l.Read(block + "gate.weight", c.num_experts, c.hidden_size));
  if (c.topk_method == TopkMethod::kNoauxTc) {
    ASSIGN_OR_RETURN(w.router_bias,
                     l.ReadVector(block + "gate.e_score_correction_bias", c.num_experts));
  }
  std::vector<std::string> proj = ExpertProjectionNames(c);
  w.experts.resize(c.num_experts);
  for (int e = 0; e < c.num_experts; ++e) {
    if (options.load_expert && !options.load_expert(layer, e)) continue;
    ASSIGN_OR_RETURN(w.experts[e], l.ReadMlp(ExpertPrefix(c, layer, e), proj[0], proj[1], proj[2],
                                             c.hidden_size, c.moe_intermediate_size));
  }
  if (c.shared_expert_intermediate_size > 0) {
    // qwen2_moe: mlp.shared_expert + its gate; deepseek: mlp.shared_experts, ungated.
    const std::string shared = c.shared_expert_gated ? "shared_expert." : "shared_experts.";
    ASSIGN_OR_RETURN(w.shared_expert, l.ReadMlp(block + shared, "gate_proj", "up_proj", "down_proj",
                                                c.hidden_size, c.shared_expert_intermediate_size));
    if (c.shared_expert_gated) {
      ASSIGN_OR_RETURN(w.shared_expert_gate,
                       l.Read(block + "shared_expert_gate.weight", 1, c.hidden_size));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string ExpertPrefix(const ModelConfig& config, int layer, int expert) {
  return absl::StrCat(
      "model.layers.", layer,
      config.arch == Arch::kMixtral ? ".block_sparse_moe.experts." : ".mlp.experts.", expert, ".");
}

std::vector<std::string> ExpertProjectionNames(const ModelConfig& config) {
  if (config.arch == Arch::kMixtral) return {"w1", "w3", "w2"};
  return {"gate_proj", "up_proj", "down_proj"};
}

absl::StatusOr<MlpWeights> LoadExpert(const ModelConfig& c, const kernels::Checkpoint& checkpoint,
                                      int layer, int expert) {
  if (layer < 0 || layer >= c.num_layers || !c.IsMoeLayer(layer) || expert < 0 ||
      expert >= c.num_experts) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer ", layer, " has no expert ", expert, " in this model"));
  }
  Loader l(checkpoint, c.fp8);
  const std::vector<std::string> proj = ExpertProjectionNames(c);
  return l.ReadMlp(ExpertPrefix(c, layer, expert), proj[0], proj[1], proj[2], c.hidden_size,
                   c.moe_intermediate_size);
}

namespace {
int64_t LinearBytes(const LinearWeight& w) {
  return static_cast<int64_t>(w.w.size()) * 4 + static_cast<int64_t>(w.bf16.size()) * 2 +
         static_cast<int64_t>(w.fp8.codes.size()) + static_cast<int64_t>(w.fp8.scales.size()) * 4;
}
}  // namespace

bool HasFp8OnlyWeights(const ModelWeights& w) {
  for (const LayerWeights& l : w.layers) {
    for (const LinearWeight* x : NonExpertLinears(l)) {
      if (x->fp8_only()) return true;
    }
    for (const MlpWeights& e : l.experts) {
      if (e.gate.fp8_only() || e.up.fp8_only() || e.down.fp8_only()) return true;
    }
  }
  return w.lm_head.fp8_only();
}

int64_t WeightBytes(const MlpWeights& m) {
  return LinearBytes(m.gate) + LinearBytes(m.up) + LinearBytes(m.down);
}

int64_t WeightBytes(const ModelWeights& w) {
  int64_t floats = w.embed.size() + w.final_norm.size();
  int64_t bytes = LinearBytes(w.lm_head);
  for (const LayerWeights& l : w.layers) {
    for (const LinearWeight* x :
         {&l.q, &l.k, &l.v, &l.o, &l.mla.q_a, &l.mla.q_b, &l.mla.kv_a, &l.mla.kv_b}) {
      bytes += LinearBytes(*x);
    }
    for (const Vector* v :
         {&l.input_norm, &l.q_bias, &l.k_bias, &l.v_bias, &l.q_norm, &l.k_norm, &l.mla.q_a_norm,
          &l.mla.kv_a_norm, &l.post_attention_norm, &l.router_bias}) {
      floats += v->size();
    }
    floats += l.router.size() + l.shared_expert_gate.size();
    bytes += WeightBytes(l.dense) + WeightBytes(l.shared_expert);
    for (const MlpWeights& e : l.experts) bytes += WeightBytes(e);
  }
  return bytes + 4 * floats;
}

absl::StatusOr<std::unique_ptr<ModelWeights>> LoadWeights(const ModelConfig& c,
                                                          const kernels::Checkpoint& checkpoint,
                                                          const LoadOptions& options) {
  Loader l(checkpoint, c.fp8, options.fp8_in_memory);
  auto w = std::make_unique<ModelWeights>();
  ASSIGN_OR_RETURN(w->embed, l.Read("model.embed_tokens.weight", c.vocab_size, c.hidden_size));
  w->layers.resize(c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = absl::StrCat("model.layers.", i, ".");
    RETURN_IF_ERROR(LoadAttention(c, p, l, w->layers[i]));
    RETURN_IF_ERROR(LoadFeedForward(c, i, p, l, options, w->layers[i]));
  }
  ASSIGN_OR_RETURN(w->final_norm, l.ReadVector("model.norm.weight", c.hidden_size));
  const bool tied = c.tie_word_embeddings && !checkpoint.Info("lm_head.weight").ok();
  ASSIGN_OR_RETURN(w->lm_head, l.ReadLinear(tied ? "model.embed_tokens.weight" : "lm_head.weight",
                                            c.vocab_size, c.hidden_size));
  return w;
}

}  // namespace semmoe::engine::model
