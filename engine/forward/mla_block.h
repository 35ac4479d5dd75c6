// MlaBlock<Ops>: DeepSeek's multi-head latent attention in the op-set forward
// (engine/forward/forward_runner.h, whose Ops it uses). Per head, with kv_b expanding the cached
// latent to [k_nope | v] and k_rope one head shared by all heads:
//   scores = (q_nope·k_nope + RoPE(q_rope)·RoPE(k_rope)) · (nope + rope)^-½ · YaRN mscale²
// The cache holds the latent, never per-head K/V: MLA's memory saving. Every pass writes the new
// latent rows to the cache:
//   q      = q_proj(h), or q_b(RMSNorm(q_a(h)))          per head [q_nope | q_rope]
//   cache  ← [RMSNorm(c_kv) | RoPE(k_rope)] of kv_a(h)    kv_lora_rank + rope floats a position
// then attends in one of two forms, chosen per pass:
// - absorbed (decode steps, chunks, mixed batches):
//   qa[h]  = [q_nope · W_uk_h | RoPE(q_rope)]            one strided batched product over heads
//   oa     = attention of qa over the cached rows, as one KV head whose values are the same rows
//   attn[h] = oa[h]'s latent part · W_uv_hᵀ              a second batched product
//   where W_uk_h and W_uv_h are rows of kv_b, read in place;
// - expanded (a pass of fresh prompts only: every sequence starts at position 0, so its whole
//   context is this pass's rows): per head, k_nope = c_kv · W_uk_hᵀ and v = c_kv · W_uv_hᵀ for
//   the pass's rows (two strided batched products that write each head's key [k_nope |
//   RoPE(k_rope)] and value (v wide: PagedAttentionArgs::v_head_dim) in place), and ordinary
//   multi-head attention over them, indexed by a page table of one-position pages into the
//   pass's rows. Per cached
//   position a head then costs nope + rope + v floats of products instead of
//   2 × kv_lora_rank + rope: about a third for DeepSeek-V3 (320 against 1088), so prompts go
//   this way.
// The caller applies o_proj.
//
// Thread-compatible.
#ifndef SEMMOE_ENGINE_FORWARD_MLA_BLOCK_H_
#define SEMMOE_ENGINE_FORWARD_MLA_BLOCK_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "engine/forward/mla_rope.h"
#include "engine/forward/model_view.h"
#include "engine/model/forward_io.h"
#include "engine/text/config.h"
#include "engine/text/deepseek_config.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/op_args.h"

namespace semmoe::engine::forward {

template <typename Ops>
class MlaBlock {
 public:
  template <typename T>
  using Array = typename Ops::template Array<T>;

  // A pass's buffers and metadata (Ops memory, the runner's).
  struct Pass {
    const float* x = nullptr;  // [T, hidden]: the residual stream entering the layer.
    float* h = nullptr;        // [T, hidden]: scratch for its input norm.
    float* q = nullptr;        // [T, heads × (nope + rope)]: scratch for the queries.
    float* attn = nullptr;     // [T, heads × v]: out, before o_proj.
    const int32_t *positions = nullptr, *seq_of_token = nullptr, *page_table = nullptr;
    int max_pages = 0, page_size = 0;
    float* cache = nullptr;       // The layer's latent cache [pages, page_size, r + rope], or
    uint16_t* cache16 = nullptr;  // its bf16 form.
  };

  // Borrows `config` and `ops` (outlive this).
  MlaBlock(const model::ModelConfig& config, Ops& ops) : c_(config), ops_(ops) {}

  // Uploads the rotary tables (over the rotary dims, YaRN included). Ops memory must be usable.
  absl::Status Init() {
    const std::vector<float> inv_freq = MlaRopeInvFreq(c_);
    std::vector<float> cos(static_cast<size_t>(c_.max_position_embeddings) * inv_freq.size());
    std::vector<float> sin(cos.size());
    kernels::cpu::RopeTablesFromInvFreq(c_.max_position_embeddings, inv_freq,
                                        static_cast<float>(c_.yarn.attention_factor), cos.data(),
                                        sin.data());
    RETURN_IF_ERROR(rope_cos_.Reserve(cos.size()));
    RETURN_IF_ERROR(rope_sin_.Reserve(sin.size()));
    RETURN_IF_ERROR(ops_.CopyIn(rope_cos_.data(), cos.data(), cos.size()));
    return ops_.CopyIn(rope_sin_.data(), sin.data(), sin.size());
  }

  // Grows the buffers to a pass of `tokens` rows.
  absl::Status Reserve(int64_t tokens) {
    const model::MlaConfig& m = c_.mla_dims;
    const int64_t latent = m.kv_lora_rank + m.qk_rope_head_dim;
    RETURN_IF_ERROR(q_latent_.Reserve(tokens * std::max(1, m.q_lora_rank)));
    RETURN_IF_ERROR(rows_.Reserve(tokens * latent));
    for (Array<float>* a : {&qa_, &oa_})
      RETURN_IF_ERROR(a->Reserve(tokens * c_.num_heads * latent));
    return absl::OkStatus();
  }

  // Chooses the pass's form (see above) from its sequences, on the host, before Run; the
  // expanded form's page table goes to Ops memory. A pass captured as a decode graph is never
  // expanded.
  absl::Status BeginPass(absl::Span<const model::SequenceInput> batch, int64_t tokens) {
    const model::MlaConfig& m = c_.mla_dims;
    const int64_t q_head = m.qk_nope_head_dim + m.qk_rope_head_dim;
    expanded_ = !batch.empty();
    int64_t longest = 0;
    for (const model::SequenceInput& s : batch) {
      expanded_ = expanded_ && s.start_position == 0;
      longest = std::max<int64_t>(longest, s.tokens.size());
    }
    if (!expanded_) return absl::OkStatus();
    // Sequence s's position p is the pass's row first(s) + p: pages of one position.
    table_pages_ = static_cast<int>(longest);
    std::vector<int32_t> table(batch.size() * longest, 0);
    int32_t first = 0;
    for (size_t s = 0; s < batch.size(); ++s) {
      for (size_t p = 0; p < batch[s].tokens.size(); ++p) table[s * longest + p] = first + p;
      first += static_cast<int32_t>(batch[s].tokens.size());
    }
    const int64_t heads = c_.num_heads;
    RETURN_IF_ERROR(table_.Reserve(table.size()));
    RETURN_IF_ERROR(ops_.CopyIn(table_.data(), table.data(), table.size()));
    RETURN_IF_ERROR(keys_.Reserve(tokens * heads * q_head));
    RETURN_IF_ERROR(values_.Reserve(tokens * heads * c_.v_head_dim));
    return absl::OkStatus();
  }

  // The addresses of its buffers (a decode graph's signature).
  void AppendPointers(std::vector<const void*>& out) const {
    for (const Array<float>* a : {&q_latent_, &rows_, &qa_, &oa_, &rope_cos_, &rope_sin_}) {
      out.push_back(a->data());
    }
  }

  // p.attn = the layer's attention over `tokens` rows before o_proj; the new rows go to the cache.
  absl::Status Run(const LayerView& w, int64_t tokens, const Pass& p) {
    const model::MlaConfig& m = c_.mla_dims;
    const int heads = c_.num_heads;
    const int64_t hidden = c_.hidden_size, dn = m.qk_nope_head_dim, dr = m.qk_rope_head_dim;
    const int64_t r = m.kv_lora_rank, dv = c_.v_head_dim, latent = r + dr, q_head = dn + dr;
    RETURN_IF_ERROR(ops_.Copy(p.h, p.x, tokens * hidden));
    RETURN_IF_ERROR(ops_.RmsNorm(p.h, tokens, hidden, hidden, w.input_norm, c_.rms_norm_eps));
    if (m.q_lora_rank > 0) {
      RETURN_IF_ERROR(ops_.Linear(p.h, tokens, w.mla.q_a, q_latent_.data()));
      RETURN_IF_ERROR(ops_.RmsNorm(q_latent_.data(), tokens, m.q_lora_rank, m.q_lora_rank,
                                   w.mla.q_a_norm, model::kMlaLatentNormEps));
      RETURN_IF_ERROR(ops_.Linear(q_latent_.data(), tokens, w.mla.q_b, p.q));
    } else {
      RETURN_IF_ERROR(ops_.Linear(p.h, tokens, w.q, p.q));
    }
    // The new cache rows: the normalised latent and the rotated rotary key.
    RETURN_IF_ERROR(ops_.Linear(p.h, tokens, w.mla.kv_a, rows_.data()));
    RETURN_IF_ERROR(
        ops_.RmsNorm(rows_.data(), tokens, r, latent, w.mla.kv_a_norm, model::kMlaLatentNormEps));
    RETURN_IF_ERROR(Rope(rows_.data() + r, tokens, latent, 1, latent, p.positions));
    RETURN_IF_ERROR(ops_.StorePagedKv({.rows = rows_.data(),
                                       .tokens = tokens,
                                       .width = latent,
                                       .seq_of_token = p.seq_of_token,
                                       .position = p.positions,
                                       .page_table = p.page_table,
                                       .max_pages = p.max_pages,
                                       .page_size = p.page_size,
                                       .cache = p.cache,
                                       .cache16 = p.cache16}));
    if (expanded_) return Expanded(w, tokens, p);
    // qa[t, h] = [q_nope · W_uk_h | q_rope], then the rope part rotated.
    const LinearView& kv_b = w.mla.kv_b;
    const int64_t w_head = (dn + dv) * r;
    RETURN_IF_ERROR(ops_.HeadLinear({.x = p.q,
                                     .rows = tokens,
                                     .heads = heads,
                                     .in = dn,
                                     .out = r,
                                     .x_row_stride = heads * q_head,
                                     .x_head_stride = q_head,
                                     .w = kv_b.w,
                                     .w16 = kv_b.w16,
                                     .w_head_stride = w_head,
                                     .transposed = true,
                                     .y = qa_.data(),
                                     .y_row_stride = heads * latent,
                                     .y_head_stride = latent}));
    RETURN_IF_ERROR(ops_.Copy2D(qa_.data() + r, latent, p.q + dn, q_head, tokens * heads, dr));
    RETURN_IF_ERROR(Rope(qa_.data() + r, tokens, heads * latent, heads, latent, p.positions));
    RETURN_IF_ERROR(ops_.PagedAttention({.q = qa_.data(),
                                         .tokens = tokens,
                                         .q_heads = heads,
                                         .kv_heads = 1,
                                         .head_dim = static_cast<int>(latent),
                                         .k_cache = p.cache,
                                         .v_cache = p.cache,
                                         .page_size = p.page_size,
                                         .page_table = p.page_table,
                                         .max_pages = p.max_pages,
                                         .seq_of_token = p.seq_of_token,
                                         .position = p.positions,
                                         .scale = Scale(),
                                         .out = oa_.data(),
                                         .k_cache16 = p.cache16,
                                         .v_cache16 = p.cache16}));
    // attn[t, h] = the latent output · W_uv_hᵀ.
    return ops_.HeadLinear({.x = oa_.data(),
                            .rows = tokens,
                            .heads = heads,
                            .in = r,
                            .out = dv,
                            .x_row_stride = heads * latent,
                            .x_head_stride = latent,
                            .w = kv_b.w == nullptr ? nullptr : kv_b.w + dn * r,
                            .w16 = kv_b.w16 == nullptr ? nullptr : kv_b.w16 + dn * r,
                            .w_head_stride = w_head,
                            .y = p.attn,
                            .y_row_stride = heads * dv,
                            .y_head_stride = dv});
  }

 private:
  // The expanded form (see above), once the new rows are in rows_ and the queries in p.q.
  absl::Status Expanded(const LayerView& w, int64_t tokens, const Pass& p) {
    const model::MlaConfig& m = c_.mla_dims;
    const int heads = c_.num_heads;
    const int64_t dn = m.qk_nope_head_dim, dr = m.qk_rope_head_dim, r = m.kv_lora_rank;
    const int64_t dv = c_.v_head_dim, latent = r + dr, q_head = dn + dr, kv_head = dn + dv;
    RETURN_IF_ERROR(Rope(p.q + dn, tokens, heads * q_head, heads, q_head, p.positions));
    // keys [t, h] = [latent · W_uk_hᵀ | RoPE(k_rope)] and values [t, h] = latent · W_uv_hᵀ: kv_b's
    // two halves per head, each written where attention reads it (heads of their own size).
    const LinearView& kv_b = w.mla.kv_b;
    kernels::HeadLinearArgs half{.x = rows_.data(),
                                 .rows = tokens,
                                 .heads = heads,
                                 .in = r,
                                 .out = dn,
                                 .x_row_stride = latent,
                                 .x_head_stride = 0,
                                 .w = kv_b.w,
                                 .w16 = kv_b.w16,
                                 .w_head_stride = kv_head * r,
                                 .y = keys_.data(),
                                 .y_row_stride = heads * q_head,
                                 .y_head_stride = q_head};
    RETURN_IF_ERROR(ops_.HeadLinear(half));
    half.out = dv;
    half.w = kv_b.w == nullptr ? nullptr : kv_b.w + dn * r;
    half.w16 = kv_b.w16 == nullptr ? nullptr : kv_b.w16 + dn * r;
    half.y = values_.data();
    half.y_row_stride = heads * dv;
    half.y_head_stride = dv;
    RETURN_IF_ERROR(ops_.HeadLinear(half));
    for (int h = 0; h < heads; ++h) {
      RETURN_IF_ERROR(ops_.Copy2D(keys_.data() + h * q_head + dn, heads * q_head, rows_.data() + r,
                                  latent, tokens, dr));
    }
    return ops_.PagedAttention({.q = p.q,
                                .tokens = tokens,
                                .q_heads = heads,
                                .kv_heads = heads,
                                .head_dim = static_cast<int>(q_head),
                                .k_cache = keys_.data(),
                                .v_cache = values_.data(),
                                .page_size = 1,
                                .page_table = table_.data(),
                                .max_pages = table_pages_,
                                .seq_of_token = p.seq_of_token,
                                .position = p.positions,
                                .scale = Scale(),
                                .out = p.attn,
                                .v_head_dim = static_cast<int>(dv)});
  }

  float Scale() const {
    const model::MlaConfig& m = c_.mla_dims;
    return static_cast<float>(
        1.0 / std::sqrt(static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim)) *
        c_.yarn.softmax_mscale);
  }

  // RoPE on `heads` rotary parts of `rows` rows (the first at x; heads head_stride apart).
  absl::Status Rope(float* x, int64_t rows, int64_t row_stride, int heads, int64_t head_stride,
                    const int32_t* positions) {
    return ops_.PartialRope({.x = x,
                             .rows = rows,
                             .row_stride = row_stride,
                             .heads = heads,
                             .head_stride = head_stride,
                             .rope_dim = c_.mla_dims.qk_rope_head_dim,
                             .interleaved = c_.rope_interleave,
                             .positions = positions,
                             .cos = rope_cos_.data(),
                             .sin = rope_sin_.data()});
  }

  const model::ModelConfig& c_;
  Ops& ops_;
  Array<float> rope_cos_, rope_sin_;  // [max_position, rope / 2], × the attention factor.
  Array<float> q_latent_;             // q LoRA's latent.
  Array<float> rows_;                 // The new cache rows.
  Array<float> qa_, oa_;              // The absorbed queries and the latent outputs.
  // The expanded form (BeginPass): whether this pass takes it, its page table [sequences,
  // table_pages_], and per head the keys [T, heads × (nope + rope)] and the values [T, heads × v].
  bool expanded_ = false;
  int table_pages_ = 0;
  Array<int32_t> table_;
  Array<float> keys_, values_;
};

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_MLA_BLOCK_H_
