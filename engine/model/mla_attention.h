// MlaAttention: DeepSeek's multi-head latent attention (deepseek_v2/v3) on the CPU, in f32.
//
//   q      = q_proj(h), or q_b(RMSNorm(q_a(h)))            per head [q_nope | q_rope]
//   c      = kv_a_proj_with_mqa(h) = [c_kv | k_rope]       k_rope: one head shared by all heads
//   cache  ← [RMSNorm(c_kv) | RoPE(k_rope)]                kv_lora_rank + qk_rope_head_dim floats
//   kv     = kv_b(cached latent)                           per head [k_nope | v]
//   scores = (q_nope·k_nope + RoPE(q_rope)·RoPE(k_rope)) · (nope + rope)^-½ · YaRN mscale²
//
// The cache holds the latent, never per-head K/V: that is MLA's memory saving. Prefills expand
// the latent through kv_b (cheaper for many queries); few-token steps (decode) absorb kv_b into
// the query and the output instead (q_nope·W_uk against the latent, then W_uv), which reads only
// the latent per cached position. Both are exact reformulations in f32.
//
// Thread-safe after construction (immutable tables).
#ifndef SEMMOE_ENGINE_MODEL_MLA_ATTENTION_H_
#define SEMMOE_ENGINE_MODEL_MLA_ATTENTION_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "engine/model/weights.h"
#include "engine/text/config.h"

namespace semmoe::engine::model {

struct SequenceInput;  // transformer.h

// The rotary frequencies over qk_rope_head_dim (HF's f32 computation): plain θ^(-2i/d), or
// DeepSeek's YaRN interpolation when config.yarn is enabled.
std::vector<float> MlaRopeInvFreq(const ModelConfig& config);

class MlaAttention {
 public:
  // REQUIRES: config.mla. Under Attention-TP `config` is the rank's head slice.
  explicit MlaAttention(const ModelConfig& config);

  // This process's attention output for `layer` ([T, hidden], o_proj applied; under
  // Attention-TP a partial sum over its heads). `h`: the input-normed hidden states [T, hidden];
  // `positions`: [T]. Writes the new positions' latents into each sequence's cache.
  Matrix Forward(const LayerWeights& w, int layer, absl::Span<const SequenceInput> batch,
                 const std::vector<int32_t>& positions, const Matrix& h) const;

  // Sequences with at most this many new tokens use the absorbed form.
  static constexpr int kAbsorbedTokens = 4;

 private:
  // attn rows [row, row + n) for one sequence; `q` [T, heads × (nope + rope)], rotated.
  void Expanded(const LayerWeights& w, int layer, const SequenceInput& seq, const Matrix& q,
                int64_t row, Matrix& attn) const;
  void Absorbed(const LayerWeights& w, int layer, const SequenceInput& seq, const Matrix& q,
                int64_t row, Matrix& attn) const;
  // The cached latents [context, kv_lora_rank] and rotary keys [context, rope] of a sequence.
  void GatherCache(int layer, const SequenceInput& seq, int context, Matrix& latent,
                   Matrix& rope_keys) const;

  ModelConfig config_;
  float scale_;                             // Softmax scale.
  std::vector<float> rope_cos_, rope_sin_;  // [max_position, rope / 2], × attention factor.
};

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_MODEL_MLA_ATTENTION_H_
