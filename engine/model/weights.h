// ModelWeights: every parameter of a supported architecture as f32 matrices, loaded from a
// checkpoint by Hugging Face tensor names and checked against the config (every expected tensor
// present with the expected shape; BF16/F16/F32 accepted and upcast; block-scaled FP8 weights —
// F8_E4M3 with `<name>_scale_inv`, ModelConfig::fp8 — dequantised).
//
// Linear weights keep the HF layout [out_features, in_features] (y = x · Wᵀ).
#ifndef SEMMOE_ENGINE_MODEL_WEIGHTS_H_
#define SEMMOE_ENGINE_MODEL_WEIGHTS_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "engine/text/config.h"
#include "kernels/safetensors.h"

namespace semmoe::engine::model {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXf;

// A linear layer's weight [out, in] in f32, plus — when the checkpoint stored it in BF16 — the
// same values as bf16 bits. Widening bf16 to f32 is exact, so kernels may read either; the
// few-row (decode) kernels read the bf16 copy: half the bytes, and those bytes bound a decode
// step (docs/PERFORMANCE.md).
// A block-scaled FP8 weight as the checkpoint stores it: F8_E4M3 codes and `<name>_scale_inv`,
// one f32 scale per [block_rows, block_cols] block (edge blocks partial). Value (i, j) =
// decode(codes[i, j]) × scales[i / block_rows, j / block_cols] — what `LinearWeight::w` holds.
struct Fp8Weight {
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> codes;  // [rows, cols]
  std::vector<float> scales;   // [ceil(rows / block_rows), ceil(cols / block_cols)]
  int block_rows = 0, block_cols = 0;
  bool empty() const { return codes.empty(); }
};

struct LinearWeight {
  Matrix w;
  std::vector<uint16_t> bf16;  // Empty unless the stored dtype was BF16.
  // Set instead of `w` when the stored dtype was F8_E4M3 and the load kept FP8
  // (LoadOptions::fp8_in_memory: the FP8 device forward, engine/forward/fp8_view.h); else empty
  // (`w` holds the dequantised values).
  Fp8Weight fp8;
  int64_t rows() const { return w.size() > 0 || fp8.empty() ? w.rows() : fp8.rows; }
  int64_t cols() const { return w.size() > 0 || fp8.empty() ? w.cols() : fp8.cols; }
  bool empty() const { return w.size() == 0 && fp8.empty(); }
  bool fp8_only() const { return w.size() == 0 && !fp8.empty(); }
};

struct MlpWeights {   // SwiGLU: down(silu(gate(x)) ⊙ up(x)).
  LinearWeight gate;  // [intermediate, hidden]
  LinearWeight up;    // [intermediate, hidden]
  LinearWeight down;  // [hidden, intermediate]
  bool loaded() const { return !gate.empty(); }
};

// Multi-head latent attention (config.mla). Per head the query is [q_nope | q_rope] and kv_b's
// output [k_nope | v]; see ModelConfig::mla_dims.
struct MlaWeights {
  LinearWeight q_a;   // [q_lora_rank, hidden]; empty without q LoRA (LayerWeights::q is q_proj).
  Vector q_a_norm;    // [q_lora_rank]
  LinearWeight q_b;   // [heads × (nope + rope), q_lora_rank]
  LinearWeight kv_a;  // kv_a_proj_with_mqa [kv_lora_rank + rope, hidden]: latent | rotary key.
  Vector kv_a_norm;   // [kv_lora_rank]
  LinearWeight kv_b;  // [heads × (nope + v_head_dim), kv_lora_rank]
};

struct LayerWeights {
  Vector input_norm;              // [hidden]
  LinearWeight q, k, v;           // [q_size | kv_size, hidden]; MLA: q is q_proj (no q LoRA).
  Vector q_bias, k_bias, v_bias;  // Empty unless config.attention_bias.
  LinearWeight o;                 // [hidden, attn_out_size]
  Vector q_norm, k_norm;          // [head_dim]; empty unless config.qk_norm.
  MlaWeights mla;                 // config.mla only.
  Vector post_attention_norm;     // [hidden]

  bool is_moe = false;
  MlpWeights dense;                 // Dense layers only.
  Matrix router;                    // [num_experts, hidden]
  Vector router_bias;               // e_score_correction_bias [num_experts]; noaux_tc only.
  std::vector<MlpWeights> experts;  // [num_experts]; unloaded entries are empty (see filter).
  MlpWeights shared_expert;         // qwen2_moe, deepseek (n_shared_experts wide).
  Matrix shared_expert_gate;        // [1, hidden]; qwen2_moe only (DeepSeek's are ungated).
};

// A layer's linear weights but the routing ones (router, shared-expert gate) and the experts:
// attention (q, k, v, o; MLA's q_a, q_b, kv_a, kv_b), the dense MLP, the shared expert — absent
// ones included (empty). For LayerWeights and engine/forward's LayerView alike (the same field
// names), const or not.
template <typename Layer>
auto NonExpertLinears(Layer& l) {
  return std::array{&l.q,          &l.k,           &l.v,           &l.o,
                    &l.mla.q_a,    &l.mla.q_b,     &l.mla.kv_a,    &l.mla.kv_b,
                    &l.dense.gate, &l.dense.up,    &l.dense.down,  &l.shared_expert.gate,
                    &l.shared_expert.up,           &l.shared_expert.down};
}

struct ModelWeights {
  Matrix embed;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  Vector final_norm;     // [hidden]
  LinearWeight lm_head;  // [vocab, hidden]; a copy of embed when tie_word_embeddings.
};

struct LoadOptions {
  // Which experts this process holds (expert parallelism); null = all.
  std::function<bool(int layer, int expert)> load_expert;
  // F8_E4M3 weights keep only their codes and scales (LinearWeight::fp8), never dequantised on
  // the host: the FP8 device forward's load (`engine --precision fp8`), whose host memory is
  // then about the FP8 file's size. The CPU forward cannot run such weights (it refuses them).
  bool fp8_in_memory = false;
};

// Whether some linear weight holds only its FP8 copy (LoadOptions::fp8_in_memory).
bool HasFp8OnlyWeights(const ModelWeights& weights);

// InvalidArgument naming the tensor for a wrong shape; NotFound for a missing tensor.
absl::StatusOr<std::unique_ptr<ModelWeights>> LoadWeights(const ModelConfig& config,
                                                          const kernels::Checkpoint& checkpoint,
                                                          const LoadOptions& options = {});

// One expert's projections, as LoadWeights loads them: for experts a rank gains while it serves
// (a new placement). Errors as LoadWeights'.
absl::StatusOr<MlpWeights> LoadExpert(const ModelConfig& config,
                                      const kernels::Checkpoint& checkpoint, int layer, int expert);
// Bytes an expert's weights take in memory (f32 plus the bf16 copy when there is one, or FP8).
int64_t WeightBytes(const MlpWeights& mlp);
// The same for a whole model's (or a rank's) weights.
int64_t WeightBytes(const ModelWeights& weights);

// The HF tensor-name prefix of an expert's projections, e.g. "model.layers.3.mlp.experts.7." and
// the names of its three projections ({gate, up, down}: gate_proj/up_proj/down_proj, or
// w1/w3/w2 for mixtral).
std::string ExpertPrefix(const ModelConfig& config, int layer, int expert);
std::vector<std::string> ExpertProjectionNames(const ModelConfig& config);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_MODEL_WEIGHTS_H_
