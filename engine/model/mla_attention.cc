#include "engine/model/mla_attention.h"

#include <algorithm>
#include <cmath>

#include "engine/model/linear.h"
#include "engine/model/transformer.h"
#include "engine/text/deepseek_config.h"
#include "kernels/cpu/nn_ops.h"

namespace semmoe::engine::model {

std::vector<float> MlaRopeInvFreq(const ModelConfig& c) {
  const int dim = c.mla_dims.qk_rope_head_dim, half = dim / 2;
  std::vector<float> inv_freq = kernels::cpu::RopeInvFreq(dim, c.rope_theta);
  if (!c.yarn.enabled) return inv_freq;
  // DeepSeek's YaRN (HF _compute_yarn_parameters): dims whose wavelength is short against the
  // original context keep their frequency (extrapolation), long ones are divided by `factor`
  // (interpolation), with a linear ramp between the correction dims of beta_fast and beta_slow.
  const YarnConfig& y = c.yarn;
  const double pi = std::acos(-1.0);
  auto correction_dim = [&](double rotations) {
    return dim * std::log(y.original_max_position_embeddings / (rotations * 2 * pi)) /
           (2 * std::log(c.rope_theta));
  };
  const double low = std::max(std::floor(correction_dim(y.beta_fast)), 0.0);
  double high = std::min(std::ceil(correction_dim(y.beta_slow)), static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // As HF: avoids a division by zero.
  const float factor = static_cast<float>(y.factor);
  for (int i = 0; i < half; ++i) {
    const float ramp = std::clamp(static_cast<float>((i - low) / (high - low)), 0.0f, 1.0f);
    const float extrapolation = inv_freq[i];
    const float interpolation = inv_freq[i] / factor;
    inv_freq[i] = interpolation * ramp + extrapolation * (1.0f - ramp);
  }
  return inv_freq;
}

MlaAttention::MlaAttention(const ModelConfig& config) : config_(config) {
  const MlaConfig& m = config.mla_dims;
  scale_ = static_cast<float>(
      1.0 / std::sqrt(static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim)) *
      config.yarn.softmax_mscale);
  const std::vector<float> inv_freq = MlaRopeInvFreq(config);
  rope_cos_.resize(static_cast<size_t>(config.max_position_embeddings) * inv_freq.size());
  rope_sin_.resize(rope_cos_.size());
  kernels::cpu::RopeTablesFromInvFreq(config.max_position_embeddings, inv_freq,
                                      static_cast<float>(config.yarn.attention_factor),
                                      rope_cos_.data(), rope_sin_.data());
}

void MlaAttention::GatherCache(int layer, const SequenceInput& seq, int context, Matrix& latent,
                               Matrix& rope_keys) const {
  const int r = config_.mla_dims.kv_lora_rank, dr = config_.mla_dims.qk_rope_head_dim;
  latent.resize(context, r);
  rope_keys.resize(context, dr);
  for (int p = 0; p < context; ++p) {
    const float* row = seq.kv->Key(layer, p);
    std::copy_n(row, r, latent.row(p).data());
    std::copy_n(row + r, dr, rope_keys.row(p).data());
  }
}

void MlaAttention::Expanded(const LayerWeights& w, int layer, const SequenceInput& seq,
                            const Matrix& q, int64_t row, Matrix& attn) const {
  const MlaConfig& m = config_.mla_dims;
  const int dn = m.qk_nope_head_dim, dr = m.qk_rope_head_dim, dv = config_.v_head_dim;
  const int n = static_cast<int>(seq.tokens.size());
  const int context = seq.start_position + n;
  Matrix latent, rope_keys, kv, scores;
  GatherCache(layer, seq, context, latent, rope_keys);
  LinearInto(latent, w.mla.kv_b, kv);  // [context, heads × (nope + v)]
  for (int head = 0; head < config_.num_heads; ++head) {
    const int64_t q0 = static_cast<int64_t>(head) * (dn + dr);
    const int64_t kv0 = static_cast<int64_t>(head) * (dn + dv);
    scores.noalias() = q.block(row, q0, n, dn) * kv.block(0, kv0, context, dn).transpose();
    scores.noalias() += q.block(row, q0 + dn, n, dr) * rope_keys.transpose();
    scores *= scale_;
    kernels::cpu::CausalSoftmax(
        {scores.data(), scores.rows(), scores.cols(), scores.cols(), seq.start_position});
    attn.block(row, static_cast<int64_t>(head) * dv, n, dv).noalias() =
        scores * kv.block(0, kv0 + dn, context, dv);
  }
}

void MlaAttention::Absorbed(const LayerWeights& w, int layer, const SequenceInput& seq,
                            const Matrix& q, int64_t row, Matrix& attn) const {
  const MlaConfig& m = config_.mla_dims;
  const int dn = m.qk_nope_head_dim, dr = m.qk_rope_head_dim, dv = config_.v_head_dim;
  const int r = m.kv_lora_rank;
  const int n = static_cast<int>(seq.tokens.size());
  const int context = seq.start_position + n;
  Matrix latent, rope_keys, q_latent, scores, out_latent;
  GatherCache(layer, seq, context, latent, rope_keys);
  const Matrix& kv_b = w.mla.kv_b.w;  // [heads × (nope + v), r]
  for (int head = 0; head < config_.num_heads; ++head) {
    const int64_t q0 = static_cast<int64_t>(head) * (dn + dr);
    const int64_t kv0 = static_cast<int64_t>(head) * (dn + dv);
    // q_nope · k_nopeᵀ = q_nope · (latent · W_ukᵀ)ᵀ = (q_nope · W_uk) · latentᵀ.
    q_latent.noalias() = q.block(row, q0, n, dn) * kv_b.block(kv0, 0, dn, r);  // [n, r]
    scores.noalias() = q_latent * latent.transpose();
    scores.noalias() += q.block(row, q0 + dn, n, dr) * rope_keys.transpose();
    scores *= scale_;
    kernels::cpu::CausalSoftmax(
        {scores.data(), scores.rows(), scores.cols(), scores.cols(), seq.start_position});
    // P · v = P · latent · W_uvᵀ.
    out_latent.noalias() = scores * latent;  // [n, r]
    attn.block(row, static_cast<int64_t>(head) * dv, n, dv).noalias() =
        out_latent * kv_b.block(kv0 + dn, 0, dv, r).transpose();
  }
}

Matrix MlaAttention::Forward(const LayerWeights& w, int layer,
                             absl::Span<const SequenceInput> batch,
                             const std::vector<int32_t>& positions, const Matrix& h) const {
  const ModelConfig& c = config_;
  const MlaConfig& m = c.mla_dims;
  const int dn = m.qk_nope_head_dim, dr = m.qk_rope_head_dim, r = m.kv_lora_rank;
  const int64_t tokens = h.rows();
  Matrix q;
  if (m.q_lora_rank > 0) {
    Matrix q_latent;
    LinearInto(h, w.mla.q_a, q_latent);
    kernels::cpu::RmsNorm({q_latent.data(), tokens, m.q_lora_rank, m.q_lora_rank,
                           w.mla.q_a_norm.data(), kMlaLatentNormEps});
    LinearInto(q_latent, w.mla.q_b, q);
  } else {
    LinearInto(h, w.q, q);
  }
  Matrix latent;  // [T, r + rope]: [c_kv | k_rope], normalised and rotated in place.
  LinearInto(h, w.mla.kv_a, latent);
  kernels::cpu::RmsNorm(
      {latent.data(), tokens, r, r + dr, w.mla.kv_a_norm.data(), kMlaLatentNormEps});
  kernels::cpu::ApplyPartialRope({.x = q.data() + dn,
                                  .rows = tokens,
                                  .row_stride = q.cols(),
                                  .heads = c.num_heads,
                                  .head_stride = dn + dr,
                                  .rope_dim = dr,
                                  .interleaved = c.rope_interleave,
                                  .positions = positions.data(),
                                  .cos = rope_cos_.data(),
                                  .sin = rope_sin_.data()});
  kernels::cpu::ApplyPartialRope({.x = latent.data() + r,
                                  .rows = tokens,
                                  .row_stride = r + dr,
                                  .heads = 1,
                                  .head_stride = dr,
                                  .rope_dim = dr,
                                  .interleaved = c.rope_interleave,
                                  .positions = positions.data(),
                                  .cos = rope_cos_.data(),
                                  .sin = rope_sin_.data()});
  Matrix attn(tokens, c.attn_out_size());
  int64_t row = 0;
  for (const SequenceInput& seq : batch) {
    const int n = static_cast<int>(seq.tokens.size());
    for (int t = 0; t < n; ++t) {
      std::copy_n(latent.row(row + t).data(), r + dr, seq.kv->Key(layer, seq.start_position + t));
    }
    if (n <= kAbsorbedTokens) {
      Absorbed(w, layer, seq, q, row, attn);
    } else {
      Expanded(w, layer, seq, q, row, attn);
    }
    row += n;
  }
  Matrix projected;
  LinearInto(attn, w.o, projected);
  return projected;
}

}  // namespace semmoe::engine::model
