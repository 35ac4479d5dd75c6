// Transformer: the f32 CPU forward pass of qwen3_moe, qwen2_moe, mixtral, deepseek_v2 and
// deepseek_v3, with the semantics of transformers' eager implementations (DeepSeek: of DeepSeek's
// released modeling code; docs/ENGINE.md, "The forward pass"). MLA attention: mla_attention.h.
//
// A batch holds any mix of sequences, each with new tokens appended after the positions its
// KvSequence already holds: a prefill is many new tokens, a decode step one, a chunked prefill
// anything between. All tokens of the batch go through the projections and the MoE layers
// together; the experts run grouped by expert over the whole batch.
//
// Thread-safety: with the local stage Forward() uses no shared mutable state and concurrent calls
// on different batches are safe; a parallel stage makes it thread-compatible. The weights must
// outlive the Transformer.
#ifndef SEMMOE_ENGINE_MODEL_TRANSFORMER_H_
#define SEMMOE_ENGINE_MODEL_TRANSFORMER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/kv_sequence.h"
#include "engine/model/mla_attention.h"
#include "engine/model/moe.h"
#include "engine/model/weights.h"
#include "engine/text/config.h"

namespace semmoe::engine::model {

enum class LogitsMode {
  kNone,  // No logits (e.g. a prefill chunk that does not end the prompt).
  kLast,  // The last new token's logits.
  kAll,   // Every new token's logits (scoring).
};

struct SequenceInput {
  absl::Span<const int32_t> tokens;  // The new tokens; non-empty.
  int start_position = 0;            // Position of tokens[0]; the KV holds [0, start_position).
  KvSequence* kv = nullptr;          // Not owned; capacity ≥ start_position + tokens.size().
  LogitsMode logits = LogitsMode::kLast;
  int32_t prev_token = -1;  // The token before tokens[0] (−1: none or unknown); a hint only.
};

// The batch's token ids, and for each the token before it in its sequence (−1 if unknown):
// what parallel stages predict expert devices from.
struct BatchTokens {
  absl::Span<const int32_t> ids;
  absl::Span<const int32_t> prev;
};

struct ForwardOutput {
  // Rows in batch order: one per kLast sequence, tokens.size() per kAll sequence.
  Matrix logits;  // [rows, vocab]
  // Per MoE layer (config.MoeLayers() order), per batch token in order: the routing decision.
  // Filled only when requested.
  std::vector<Routing> routing;
  double attention_seconds = 0;  // Wall time in attention (projections, RoPE, cache, scores).
  // Per sequence of the batch, when the caller counts them (an Attention-DP rank of an
  // expert-parallel group): expert activations served on this rank, and all of them. Else empty.
  std::vector<int64_t> local_activations, activations;
  std::vector<double> attention_seconds_per_layer;  // [layers]
};

struct ForwardOptions {
  bool collect_routing = false;
};

// What every forward pass checks first (Transformer::Forward lists the errors); on success the
// batch's token count and the rows of logits it asks for.
struct BatchShape {
  int64_t tokens = 0;
  int64_t logit_rows = 0;
};
absl::StatusOr<BatchShape> CheckBatch(const ModelConfig& config,
                                      absl::Span<const SequenceInput> batch);

// What follows attention in a layer. The local stage (the default) adds the attention output to
// the residual stream and then the FFN of the post-attention norm: x += attn; x += FFN(norm(x)).
// Parallel engines substitute their own stage (engine/parallel): expert-parallel dispatch for
// the experts, and under Attention-TP a reduce-scatter / all-gather around the FFN.
class LayerStage {
 public:
  virtual ~LayerStage() = default;
  // `x`: [T, hidden], the residual stream entering `layer`; `attn`: [T, hidden], this process's
  // attention output (under Attention-TP a partial sum over its heads; the stage may overwrite
  // it). On return `x` holds the layer's output. `tokens`: the batch's token ids [T] and their
  // predecessors.
  // `routing`: when non-null and the layer is MoE, the routing of the tokens this process ran
  // the router for (the local stage: all T, in order).
  virtual absl::Status Run(int layer, const BatchTokens& tokens, Matrix& x, Matrix& attn,
                           Routing* routing) = 0;
};

// The default stage, single-process. Thread-safe (stateless).
class LocalLayerStage final : public LayerStage {
 public:
  LocalLayerStage(const ModelConfig& config, const ModelWeights& weights)
      : config_(config), weights_(weights) {}
  absl::Status Run(int layer, const BatchTokens& tokens, Matrix& x, Matrix& attn,
                   Routing* routing) override;

 private:
  const ModelConfig& config_;
  const ModelWeights& weights_;
};

class Transformer {
 public:
  // REQUIRES: `weights` were loaded for `config` with every expert — or `stage` (borrowed,
  // outlives the transformer; null = the local stage) knows where the missing ones are. Under
  // Attention-TP `config` and `weights` are this rank's head slice (engine/parallel/tp_weights.h).
  static absl::StatusOr<std::unique_ptr<Transformer>> Create(const ModelConfig& config,
                                                             const ModelWeights& weights,
                                                             LayerStage* stage = nullptr);

  // InvalidArgument for an empty sequence, a token outside the vocabulary, a position past
  // max_position_embeddings or a KvSequence too small.
  // An empty batch is valid (an idle data-parallel rank still joins its group's collectives).
  // Errors from the stage (a failed collective) are returned as they are.
  absl::StatusOr<ForwardOutput> Forward(absl::Span<const SequenceInput> batch,
                                        const ForwardOptions& options = {}) const;

  const ModelConfig& config() const { return config_; }

 private:
  Transformer(const ModelConfig& config, const ModelWeights& weights, LayerStage* stage);
  // This process's attention output for `layer` ([T, hidden]; not yet added to x).
  Matrix Attention(int layer, absl::Span<const SequenceInput> batch,
                   const std::vector<int32_t>& positions, const Matrix& x) const;
  // attn rows [row, row + tokens) from q's rows for one sequence.
  void DirectAttention(int layer, const SequenceInput& seq, const Matrix& q, int64_t row,
                       Matrix& attn) const;
  void GemmAttention(int layer, const SequenceInput& seq, const Matrix& q, int64_t row,
                     Matrix& attn) const;

  // Sequences with at most this many new tokens use DirectAttention.
  static constexpr int kDirectAttentionTokens = 4;

  ModelConfig config_;
  const ModelWeights& weights_;
  std::unique_ptr<LocalLayerStage> local_stage_;  // Set when no stage was given.
  LayerStage* stage_;
  std::unique_ptr<MlaAttention> mla_;       // config.mla only.
  std::vector<float> rope_cos_, rope_sin_;  // [max_position, head_dim / 2]; not under MLA.
};

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_MODEL_TRANSFORMER_H_
