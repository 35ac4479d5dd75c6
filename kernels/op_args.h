// The argument structs of the kernels: one set, with documented shapes, shared by the CPU
// references (kernels/cpu) and the CUDA launchers (kernels/cuda), so a caller fills one struct
// whichever runs it. CUDA-free. Pointers are host memory for the CPU versions and device memory
// for the CUDA ones; sizes are element counts.
#ifndef SEMMOE_KERNELS_OP_ARGS_H_
#define SEMMOE_KERNELS_OP_ARGS_H_

#include <cstdint>

namespace semmoe::kernels {

// Attention over a paged KV cache, prefill and decode alike: every query token names its
// sequence and position and attends to that sequence's cached positions [0, position] (causal;
// its own key and value are already in the cache).
struct PagedAttentionArgs {
  const float* q = nullptr;  // [tokens, q_heads, head_dim].
  int64_t tokens = 0;
  // q_heads % kv_heads == 0 (GQA; MLA's absorbed form is one KV head of kv_lora_rank + rope
  // floats, its values the same rows as its keys).
  int q_heads = 0, kv_heads = 0, head_dim = 0;  // CUDA: head_dim ≤ 1024.
  const float* k_cache = nullptr;               // [pages, page_size, kv_heads, head_dim].
  const float* v_cache = nullptr;               // [pages, page_size, kv_heads, value_dim()].
  int page_size = 0;
  const int32_t* page_table = nullptr;  // [sequences, max_pages]: a sequence's pages in order.
  int max_pages = 0;
  const int32_t* seq_of_token = nullptr;  // [tokens].
  const int32_t* position = nullptr;      // [tokens]: attends to [0, position].
  float scale = 1;
  float* out = nullptr;  // [tokens, q_heads, value_dim()].
  // A bf16 cache instead of k_cache / v_cache (bits, read widened to f32 exactly): used when set.
  const uint16_t* k_cache16 = nullptr;
  const uint16_t* v_cache16 = nullptr;
  // The values' head size when it differs from the keys' (MLA's expanded form: v_head_dim
  // against nope + rope); 0: head_dim. CUDA: ≤ 1024. (Last, so positional initialisers of the
  // fields above keep their meaning.)
  int v_head_dim = 0;
  int value_dim() const { return v_head_dim > 0 ? v_head_dim : head_dim; }
};

// Row t of `rows` to cache[page_table[seq_of_token[t] · max_pages + position[t] / page_size]]
// [position[t] % page_size].
struct StorePagedKvArgs {
  const float* rows = nullptr;  // [tokens, width].
  int64_t tokens = 0;
  int64_t width = 0;
  const int32_t* seq_of_token = nullptr;  // [tokens].
  const int32_t* position = nullptr;      // [tokens].
  const int32_t* page_table = nullptr;    // [sequences, max_pages].
  int max_pages = 0;
  int page_size = 0;
  float* cache = nullptr;       // [pages, page_size, width].
  uint16_t* cache16 = nullptr;  // A bf16 cache instead (rounded to nearest even): used when set.
};

// In place: x[r] = x[r] / rms(x[r]) · weight, for rows `row_stride` floats apart.
struct RmsNormArgs {
  float* x = nullptr;  // [rows, row_stride], the first `width` of each row normalised.
  int64_t rows = 0;
  int64_t width = 0;
  int64_t row_stride = 0;
  const float* weight = nullptr;  // [width].
  float eps = 1e-6f;
};

// How a router scores an expert from its logit.
enum class GateScoring : int8_t { kSoftmax, kSigmoid };
// What a group of experts scores under group-limited routing: its best expert's score
// (DeepSeek-V2's group_limited_greedy) or the sum of its two best (V3's noaux_tc).
enum class GroupScore : int8_t { kMax, kTopTwoSum };

// Per token, the one routing rule of every model (engine/model/routing_rule.h maps a config to
// it): each expert's score (softmax over the token's logits, or a sigmoid each); its choice value,
// the score plus `bias` (noaux_tc's correction; null: none); with groups > 1, the experts of all
// but the best `topk_groups` groups (by GroupScore of their choice values) out of the running;
// the top k by choice value (ties: lower expert id first); each chosen expert's weight is its
// unbiased score, then w / (Σ chosen + renormalize_epsilon) when `renormalize`, then × `scale`.
struct RouterGatingArgs {
  const float* logits = nullptr;  // [tokens, experts].
  int64_t tokens = 0;
  int experts = 0;
  int k = 0;  // 0 < k <= experts.
  bool renormalize = false;
  int32_t* ids = nullptr;    // [tokens, k], out.
  float* weights = nullptr;  // [tokens, k], out.
  GateScoring scoring = GateScoring::kSoftmax;
  const float* bias = nullptr;  // [experts] or null.
  // groups divides experts; 0 < topk_groups <= groups, and they hold at least k experts.
  int groups = 1, topk_groups = 1;
  GroupScore group_score = GroupScore::kMax;
  float renormalize_epsilon = 0;
  float scale = 1;
};

// The (token, slot) entries grouped by expert: a stable counting sort of `entries` expert ids
// in [0, experts), so each expert's rows keep token order. Outputs are caller-provided.
struct PermuteByExpertArgs {
  const int32_t* ids = nullptr;  // [entries].
  int64_t entries = 0;
  int experts = 0;
  int64_t* counts = nullptr;             // [experts], scratch.
  int64_t* offsets = nullptr;            // [experts + 1]: expert e's rows [offsets[e], e + 1).
  int64_t* entry_of_position = nullptr;  // [entries]: position → entry (t·k + j).
  int64_t* position_of_entry = nullptr;  // [entries]: the inverse.
};

// y[p] = x[entry_of_position[p] / k] for every position.
struct GatherRowsArgs {
  const float* x = nullptr;                    // [tokens, hidden].
  const int64_t* entry_of_position = nullptr;  // [entries].
  int64_t entries = 0;
  int k = 0;
  int64_t hidden = 0;
  float* y = nullptr;  // [entries, hidden].
};

// out[t] = Σ_j weights[t·k + j] · y[position_of_entry[t·k + j]], j ascending.
struct CombineRowsArgs {
  const float* y = nullptr;                    // [entries, hidden].
  const float* weights = nullptr;              // [tokens, k].
  const int64_t* position_of_entry = nullptr;  // [tokens × k].
  int64_t tokens = 0;
  int k = 0;
  int64_t hidden = 0;
  float* out = nullptr;  // [tokens, hidden].
};

// Per row at positions[r], per head: optional RMSNorm over head_dim with `norm_weight` (Qwen3's
// q_norm/k_norm; null: none), then the rotary embedding (rotate-half convention) from cos/sin
// tables [max_position, head_dim / 2].
struct QkNormRopeArgs {
  float* x = nullptr;  // [rows, row_stride]; the first heads × head_dim of each row.
  int64_t rows = 0;
  int64_t row_stride = 0;
  int heads = 0;
  int head_dim = 0;
  const float* norm_weight = nullptr;  // [head_dim] or null.
  float eps = 1e-6f;
  const int32_t* positions = nullptr;  // [rows].
  const float* cos = nullptr;
  const float* sin = nullptr;
};

// RoPE on part of each head (MLA's rotary dims): for each row and head, the `rope_dim` floats at
// x + r·row_stride + h·head_stride rotate by positions[r] · inv_freq[i], either as interleaved
// pairs (2i, 2i+1) (DeepSeek) or as halves (i, i + rope_dim/2). `cos`/`sin` are
// [max_position, rope_dim/2] (kernels/cpu RopeTablesFromInvFreq).
struct PartialRopeArgs {
  float* x = nullptr;
  int64_t rows = 0;
  int64_t row_stride = 0;
  int heads = 0;
  int64_t head_stride = 0;
  int rope_dim = 0;
  bool interleaved = true;
  const int32_t* positions = nullptr;  // [rows]
  const float* cos = nullptr;
  const float* sin = nullptr;
};

// One product per head, each head with its own matrix (MLA's absorbed kv_b): for h < heads and
// every row r, y[r, h] (out floats at y + r·y_row_stride + h·y_head_stride) = x[r, h] (in floats
// at x + r·x_row_stride + h·x_head_stride) · W_hᵀ, where W_h at w + h·w_head_stride is
// row-major [out, in]; with `transposed`, x[r, h] · W_h for W_h row-major [in, out]. An
// x_head_stride of 0 gives every head the same x (MLA's expanded keys and values).
struct HeadLinearArgs {
  const float* x = nullptr;
  int64_t rows = 0;
  int heads = 0;
  int64_t in = 0, out = 0;
  int64_t x_row_stride = 0, x_head_stride = 0;
  const float* w = nullptr;
  // Or bf16 bits of the same matrices: the product rounds x to bf16 and accumulates in f32.
  const uint16_t* w16 = nullptr;
  int64_t w_head_stride = 0;
  bool transposed = false;
  float* y = nullptr;
  int64_t y_row_stride = 0, y_head_stride = 0;
};

// Block-scaled FP8 to bf16: for each of `count` stacked [rows, cols] matrices m,
// out[m, i, j] = bf16(decode(codes[m, i, j]) × scales[m, i / block_rows, j / block_cols]) — the
// f32 product rounded to nearest even, as the host's dequantised f32 weights round to bf16.
// E4M3 "fn" codes (kernels/dtype.h); scales [count, ceil(rows / block_rows),
// ceil(cols / block_cols)].
struct Fp8DequantArgs {
  const uint8_t* codes = nullptr;
  const float* scales = nullptr;
  int64_t count = 1, rows = 0, cols = 0;
  int block_rows = 0, block_cols = 0;
  uint16_t* out = nullptr;  // [count, rows, cols] bf16 bits.
};

// SwiGLU experts over rows grouped by expert, bf16 weights and inputs, f32 accumulation:
// out[r] = down_e · (silu(gate_e · x[r]) ⊙ (up_e · x[r])) for the expert e whose rows hold r.
struct GroupedSwiGluArgs {
  const uint16_t* x = nullptr;       // [rows, hidden] bf16 bits.
  const int64_t* offsets = nullptr;  // [experts + 1]: expert e's rows are [offsets[e], e + 1).
  int experts = 0;
  int64_t rows = 0;  // offsets[experts], on the host (the CUDA launches size their grids by it).
  int64_t hidden = 0, inter = 0;
  const uint16_t* gate = nullptr;  // [experts, inter, hidden] bf16 bits.
  const uint16_t* up = nullptr;    // [experts, inter, hidden].
  const uint16_t* down = nullptr;  // [experts, hidden, inter].
  float* act = nullptr;            // CUDA: scratch [rows, inter] f32 (the CPU needs none).
  float* out = nullptr;            // [rows, hidden] f32.
  // The CPU reference only: round the activation to bf16 before the down projection, as the
  // CUDA tensor-core kernel does (each CUDA kernel has its own fixed behaviour).
  bool bf16_activation = false;
};

// Sum of G equal segments, element by element, in segment order: out[i] = Σ_s in[s·n + i] (a
// deterministic reduce-scatter's local half).
struct SegmentSumArgs {
  const float* in = nullptr;  // [segments, n].
  int segments = 0;
  int64_t n = 0;
  float* out = nullptr;  // [n]; may not alias `in`.
};

// Attention-TP's device prediction at one MoE layer (engine/parallel/device_predictor.h as lookup
// tables, engine/forward/device_prediction.h): token t's scores are the layer's row for the pair
// (previous[t], ids[t]) when that pair is a learned context, else the row of ids[t]
// (row_of_token; an id outside [0, vocab) or mapped to −1 takes unseen_row); then, with history,
// the A entry of (prev2[t], prev1[t]) replaces them — its confidence on its device, 0 elsewhere —
// when it is more confident than the row's best.
struct PredictDevicesArgs {
  const int32_t* ids = nullptr;  // [tokens].
  // [tokens]: each token's predecessor id (−1 unknown); null: no contexts.
  const int32_t* previous = nullptr;
  int64_t tokens = 0;
  int devices = 0;
  const int32_t* row_of_token = nullptr;  // [vocab]: the id's row of `shares`, −1: unseen.
  int64_t vocab = 0;
  const float* shares = nullptr;  // [rows, devices]: the layer's rows.
  int64_t unseen_row = 0;
  const uint64_t* context_keys = nullptr;  // [contexts], ascending: previous << 32 | id.
  int64_t contexts = 0;
  const float* context_shares = nullptr;  // [contexts, devices]: the layer's.
  // [tokens]: the devices each token's experts were homed on at the previous two MoE layers
  // (exact small integers as f32, −1 unknown). prev1 null: no history; prev2 null: unknown.
  const float* prev2 = nullptr;
  const float* prev1 = nullptr;
  // [(devices + 1) · devices], history (prev2 + 1) · devices + prev1: the A table's device (−1:
  // none) and confidence. Null: the layer has no A table.
  const int32_t* a_device = nullptr;
  const float* a_confidence = nullptr;
  float* scores = nullptr;  // [tokens, devices].
};

}  // namespace semmoe::kernels

#endif  // SEMMOE_KERNELS_OP_ARGS_H_
