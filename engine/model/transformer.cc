#include "engine/model/transformer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "engine/model/linear.h"
#include "kernels/cpu/decode_attention.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/cpu/small_gemm.h"

namespace semmoe::engine::model {
namespace {

using kernels::RmsNormArgs;

// RMSNorm of every row of `x` (a new matrix; x is left alone for the residual).
Matrix Normed(const Matrix& x, const Vector& weight, float eps) {
  Matrix out = x;
  kernels::cpu::RmsNorm(
      RmsNormArgs{out.data(), out.rows(), out.cols(), out.cols(), weight.data(), eps});
  return out;
}

// y = x · Wᵀ (+ bias).
Matrix Linear(const Matrix& x, const LinearWeight& w, const Vector& bias) {
  Matrix y;
  LinearInto(x, w, y);
  if (bias.size() > 0) y.rowwise() += bias.transpose();
  return y;
}

}  // namespace

absl::Status LocalLayerStage::Run(int layer, const BatchTokens& tokens, Matrix& x, Matrix& attn,
                                  Routing* routing) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[layer];
  x += attn;
  Matrix h = Normed(x, w.post_attention_norm, c.rms_norm_eps);
  Matrix& ffn = attn;  // Reused as the FFN output.
  if (w.is_moe) {
    ffn.setZero();
    Routing r = Route(c, w, h);
    RunExperts(w, h, r, ffn);
    RunSharedExpert(w, h, ffn);
    if (routing != nullptr) *routing = std::move(r);
  } else {
    RunMlp(w.dense, h, ffn);
  }
  x += ffn;
  return absl::OkStatus();
}

absl::StatusOr<BatchShape> CheckBatch(const ModelConfig& config,
                                      absl::Span<const SequenceInput> batch) {
  const ModelConfig& c = config;
  BatchShape shape;
  for (size_t s = 0; s < batch.size(); ++s) {
    const SequenceInput& seq = batch[s];
    const int64_t n = static_cast<int64_t>(seq.tokens.size());
    if (n == 0) return absl::InvalidArgumentError(absl::StrCat("sequence ", s, " has no tokens"));
    if (seq.kv == nullptr) return absl::InvalidArgumentError("sequence without a KV cache");
    if (seq.start_position < 0 || seq.start_position + n > c.max_position_embeddings) {
      return absl::InvalidArgumentError(
          absl::StrCat("sequence ", s, ": positions up to ", seq.start_position + n,
                       " exceed max_position_embeddings ", c.max_position_embeddings));
    }
    if (seq.start_position + n > seq.kv->capacity()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sequence ", s, ": KV capacity ", seq.kv->capacity(), " < ", seq.start_position + n));
    }
    for (int32_t id : seq.tokens) {
      if (id < 0 || id >= c.vocab_size) {
        return absl::InvalidArgumentError(
            absl::StrCat("token id ", id, " is outside the vocabulary [0, ", c.vocab_size, ")"));
      }
    }
    shape.tokens += n;
    shape.logit_rows += seq.logits == LogitsMode::kAll    ? n
                        : seq.logits == LogitsMode::kLast ? 1
                                                          : 0;
  }
  return shape;
}

Transformer::Transformer(const ModelConfig& config, const ModelWeights& weights, LayerStage* stage)
    : config_(config), weights_(weights), stage_(stage) {
  if (stage_ == nullptr) {
    local_stage_ = std::make_unique<LocalLayerStage>(config_, weights_);
    stage_ = local_stage_.get();
  }
  if (config.mla) {
    mla_ = std::make_unique<MlaAttention>(config_);
    return;
  }
  const size_t half = config.head_dim / 2;
  rope_cos_.resize(static_cast<size_t>(config.max_position_embeddings) * half);
  rope_sin_.resize(rope_cos_.size());
  kernels::cpu::RopeTables(config.max_position_embeddings, config.head_dim, config.rope_theta,
                           rope_cos_.data(), rope_sin_.data());
}

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::Create(const ModelConfig& config,
                                                                 const ModelWeights& weights,
                                                                 LayerStage* stage) {
  if (static_cast<int>(weights.layers.size()) != config.num_layers ||
      weights.embed.rows() != config.vocab_size || weights.embed.cols() != config.hidden_size) {
    return absl::InvalidArgumentError("weights were not loaded for this config");
  }
  if (config.max_position_embeddings > (1 << 22)) {
    return absl::InvalidArgumentError("max_position_embeddings is too large for the RoPE tables");
  }
  return std::unique_ptr<Transformer>(new Transformer(config, weights, stage));
}

// Few new tokens (decode): read the cache rows in place, no gather (kernels/cpu/decode_attention).
void Transformer::DirectAttention(int layer, const SequenceInput& seq, const Matrix& q, int64_t row,
                                  Matrix& attn) const {
  const ModelConfig& c = config_;
  const int hd = c.head_dim, group = c.num_heads / c.num_kv_heads;
  const int n = static_cast<int>(seq.tokens.size());
  const int context = seq.start_position + n;
  std::vector<const float*> keys(context), values(context);
  for (int p = 0; p < context; ++p) {
    keys[p] = seq.kv->Key(layer, p);
    values[p] = seq.kv->Value(layer, p);
  }
  std::vector<float> scores(2 * context);
  for (int t = 0; t < n; ++t) {
    for (int kvh = 0; kvh < c.num_kv_heads; ++kvh) {
      const int64_t head0 = static_cast<int64_t>(kvh) * group * hd;
      kernels::cpu::DecodeAttention({.q = q.row(row + t).data() + head0,
                                     .group = group,
                                     .head_dim = hd,
                                     .keys = keys.data(),
                                     .values = values.data(),
                                     .offset = static_cast<int64_t>(kvh) * hd,
                                     .context = seq.start_position + t + 1,  // Causal.
                                     .scale = 1.0f / std::sqrt(static_cast<float>(hd)),
                                     .scores = scores.data(),
                                     .out = attn.row(row + t).data() + head0});
    }
  }
}

// Many new tokens (prefill): gather the cache into contiguous matrices and use GEMMs per head.
void Transformer::GemmAttention(int layer, const SequenceInput& seq, const Matrix& q, int64_t row,
                                Matrix& attn) const {
  const ModelConfig& c = config_;
  const int hd = c.head_dim, group = c.num_heads / c.num_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int n = static_cast<int>(seq.tokens.size());
  const int context = seq.start_position + n;
  Matrix keys(context, c.kv_size()), values(context, c.kv_size()), scores;
  for (int p = 0; p < context; ++p) {
    std::copy_n(seq.kv->Key(layer, p), c.kv_size(), keys.row(p).data());
    std::copy_n(seq.kv->Value(layer, p), c.kv_size(), values.row(p).data());
  }
  for (int head = 0; head < c.num_heads; ++head) {
    const int kvh = head / group;
    auto qh = q.block(row, static_cast<int64_t>(head) * hd, n, hd);
    auto kh = keys.block(0, static_cast<int64_t>(kvh) * hd, context, hd);
    auto vh = values.block(0, static_cast<int64_t>(kvh) * hd, context, hd);
    scores.noalias() = (qh * kh.transpose()) * scale;  // [n, context]
    kernels::cpu::CausalSoftmax(
        {scores.data(), scores.rows(), scores.cols(), scores.cols(), seq.start_position});
    attn.block(row, static_cast<int64_t>(head) * hd, n, hd).noalias() = scores * vh;
  }
}

Matrix Transformer::Attention(int layer, absl::Span<const SequenceInput> batch,
                              const std::vector<int32_t>& positions, const Matrix& x) const {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[layer];
  const int hd = c.head_dim;
  Matrix h = Normed(x, w.input_norm, c.rms_norm_eps);
  if (mla_ != nullptr) return mla_->Forward(w, layer, batch, positions, h);
  Matrix q = Linear(h, w.q, w.q_bias);  // [T, heads·hd]
  Matrix k = Linear(h, w.k, w.k_bias);  // [T, kv_heads·hd]
  Matrix v = Linear(h, w.v, w.v_bias);
  const int64_t tokens = x.rows();
  if (c.qk_norm) {  // Per head, before RoPE.
    kernels::cpu::RmsNorm(
        {q.data(), tokens * c.num_heads, hd, hd, w.q_norm.data(), c.rms_norm_eps});
    kernels::cpu::RmsNorm(
        {k.data(), tokens * c.num_kv_heads, hd, hd, w.k_norm.data(), c.rms_norm_eps});
  }
  kernels::cpu::ApplyRope({q.data(), tokens, q.cols(), c.num_heads, hd, positions.data(),
                           rope_cos_.data(), rope_sin_.data()});
  kernels::cpu::ApplyRope({k.data(), tokens, k.cols(), c.num_kv_heads, hd, positions.data(),
                           rope_cos_.data(), rope_sin_.data()});

  Matrix attn(tokens, c.q_size());
  int64_t row = 0;
  for (const SequenceInput& seq : batch) {
    const int n = static_cast<int>(seq.tokens.size());
    for (int t = 0; t < n; ++t) {
      std::copy_n(k.row(row + t).data(), c.kv_size(), seq.kv->Key(layer, seq.start_position + t));
      std::copy_n(v.row(row + t).data(), c.kv_size(), seq.kv->Value(layer, seq.start_position + t));
    }
    if (n <= kDirectAttentionTokens) {
      DirectAttention(layer, seq, q, row, attn);
    } else {
      GemmAttention(layer, seq, q, row, attn);
    }
    row += n;
  }
  Matrix projected;
  LinearInto(attn, w.o, projected);
  return projected;
}

absl::StatusOr<ForwardOutput> Transformer::Forward(absl::Span<const SequenceInput> batch,
                                                   const ForwardOptions& options) const {
  const ModelConfig& c = config_;
  ASSIGN_OR_RETURN(const BatchShape shape, CheckBatch(c, batch));
  const int64_t tokens = shape.tokens, logit_rows = shape.logit_rows;

  Matrix x(tokens, c.hidden_size);
  std::vector<int32_t> positions(tokens), ids(tokens), prev(tokens);
  int64_t row = 0;
  for (const SequenceInput& seq : batch) {
    for (size_t t = 0; t < seq.tokens.size(); ++t, ++row) {
      x.row(row) = weights_.embed.row(seq.tokens[t]);
      positions[row] = seq.start_position + static_cast<int32_t>(t);
      ids[row] = seq.tokens[t];
      prev[row] = t == 0 ? seq.prev_token : seq.tokens[t - 1];
    }
  }

  ForwardOutput out;
  for (int layer = 0; layer < c.num_layers; ++layer) {
    const absl::Time start = absl::Now();
    Matrix attn = Attention(layer, batch, positions, x);
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    out.attention_seconds += seconds;
    out.attention_seconds_per_layer.push_back(seconds);
    const bool moe = weights_.layers[layer].is_moe;
    Routing routing;
    RETURN_IF_ERROR(stage_->Run(layer, BatchTokens{ids, prev}, x, attn,
                                moe && options.collect_routing ? &routing : nullptr));
    if (moe && options.collect_routing) out.routing.push_back(std::move(routing));
  }

  // Final norm and lm_head only on the rows whose logits are wanted.
  Matrix last(logit_rows, c.hidden_size);
  int64_t out_row = 0;
  row = 0;
  for (const SequenceInput& seq : batch) {
    const int64_t n = static_cast<int64_t>(seq.tokens.size());
    if (seq.logits == LogitsMode::kAll) {
      last.middleRows(out_row, n) = x.middleRows(row, n);
      out_row += n;
    } else if (seq.logits == LogitsMode::kLast) {
      last.row(out_row++) = x.row(row + n - 1);
    }
    row += n;
  }
  kernels::cpu::RmsNorm({last.data(), last.rows(), last.cols(), last.cols(),
                         weights_.final_norm.data(), c.rms_norm_eps});
  LinearInto(last, weights_.lm_head, out.logits);
  return out;
}

}  // namespace semmoe::engine::model
