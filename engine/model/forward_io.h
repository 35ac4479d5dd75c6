// What a forward pass takes and returns, on every op set (engine/forward/cpu_forward.h on the
// CPU, engine/gpu/gpu_transformer.h on a GPU): a batch of sequences, each with new tokens
// appended after the positions its KvSequence already holds — a prefill is many new tokens, a
// decode step one, a chunked prefill anything between — and the logits and routing it asks for.
#ifndef SEMMOE_ENGINE_MODEL_FORWARD_IO_H_
#define SEMMOE_ENGINE_MODEL_FORWARD_IO_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/kv_sequence.h"
#include "engine/model/routing.h"
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
  // An Attention-DP rank of an expert-parallel group: every rank's tokens in this pass (rank
  // order; this rank's the batch's), when the group agreed on them before it (GroupEngine's
  // step agreement). Empty: the pass gathers them itself where it needs them (one small
  // collective; engine/forward/ep_exchange.h, BeginPass).
  std::vector<int64_t> rank_tokens;
};

// What every forward pass checks first; on success the batch's token count and the rows of
// logits it asks for. InvalidArgument for an empty sequence, a sequence without a KV, a token
// outside the vocabulary, a position past max_position_embeddings or a KvSequence too small. An
// empty batch is valid (an idle data-parallel rank still joins its group's collectives).
struct BatchShape {
  int64_t tokens = 0;
  int64_t logit_rows = 0;
};
absl::StatusOr<BatchShape> CheckBatch(const ModelConfig& config,
                                      absl::Span<const SequenceInput> batch);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_MODEL_FORWARD_IO_H_
