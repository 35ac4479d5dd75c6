// ModelWeights: every parameter of a supported architecture as f32 matrices, loaded from a
// checkpoint by Hugging Face tensor names and checked against the config (every expected tensor
// present with the expected shape; BF16/F16/F32 accepted and upcast).
//
// Linear weights keep the HF layout [out_features, in_features] (y = x · Wᵀ).
#ifndef SEMMOE_ENGINE_MODEL_WEIGHTS_H_
#define SEMMOE_ENGINE_MODEL_WEIGHTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "engine/model/config.h"
#include "kernels/safetensors.h"

namespace semmoe::engine::model {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXf;

// A linear layer's weight [out, in] in f32, plus — when the checkpoint stored it in BF16 — the
// same values as bf16 bits. Widening bf16 to f32 is exact, so kernels may read either; the
// few-row (decode) kernels read the bf16 copy: half the bytes, and those bytes bound a decode
// step (docs/PERFORMANCE.md).
struct LinearWeight {
  Matrix w;
  std::vector<uint16_t> bf16;  // Empty unless the stored dtype was BF16.
  int64_t rows() const { return w.rows(); }
  int64_t cols() const { return w.cols(); }
};

struct MlpWeights {   // SwiGLU: down(silu(gate(x)) ⊙ up(x)).
  LinearWeight gate;  // [intermediate, hidden]
  LinearWeight up;    // [intermediate, hidden]
  LinearWeight down;  // [hidden, intermediate]
  bool loaded() const { return gate.w.size() > 0; }
};

struct LayerWeights {
  Vector input_norm;              // [hidden]
  LinearWeight q, k, v;           // [q_size | kv_size, hidden]
  Vector q_bias, k_bias, v_bias;  // Empty unless config.attention_bias.
  LinearWeight o;                 // [hidden, q_size]
  Vector q_norm, k_norm;          // [head_dim]; empty unless config.qk_norm.
  Vector post_attention_norm;     // [hidden]

  bool is_moe = false;
  MlpWeights dense;                 // Dense layers only.
  Matrix router;                    // [num_experts, hidden]
  std::vector<MlpWeights> experts;  // [num_experts]; unloaded entries are empty (see filter).
  MlpWeights shared_expert;         // qwen2_moe only.
  Matrix shared_expert_gate;        // [1, hidden]; qwen2_moe only.
};

struct ModelWeights {
  Matrix embed;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  Vector final_norm;     // [hidden]
  LinearWeight lm_head;  // [vocab, hidden]; a copy of embed when tie_word_embeddings.
};

struct LoadOptions {
  // Which experts this process holds (expert parallelism); null = all.
  std::function<bool(int layer, int expert)> load_expert;
};

// InvalidArgument naming the tensor for a wrong shape; NotFound for a missing tensor.
absl::StatusOr<std::unique_ptr<ModelWeights>> LoadWeights(const ModelConfig& config,
                                                          const kernels::Checkpoint& checkpoint,
                                                          const LoadOptions& options = {});

// One expert's projections, as LoadWeights loads them: for experts a rank gains while it serves
// (a new placement). Errors as LoadWeights'.
absl::StatusOr<MlpWeights> LoadExpert(const ModelConfig& config,
                                      const kernels::Checkpoint& checkpoint, int layer, int expert);
// Bytes an expert's weights take in memory (f32, plus the bf16 copy when there is one).
int64_t WeightBytes(const MlpWeights& mlp);

// The HF tensor-name prefix of an expert's projections, e.g. "model.layers.3.mlp.experts.7." and
// the names of its three projections ({gate, up, down}: gate_proj/up_proj/down_proj, or
// w1/w3/w2 for mixtral).
std::string ExpertPrefix(const ModelConfig& config, int layer, int expert);
std::vector<std::string> ExpertProjectionNames(const ModelConfig& config);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_MODEL_WEIGHTS_H_
