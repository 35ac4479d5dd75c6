// Runs many prompts through the forward pass in token-budget batches (prefill only, no
// generation) and hands each prompt's final logits and routing to a callback. Shared by
// `engine score` and `engine trace`.
#ifndef SEMMOE_ENGINE_OFFLINE_PREFILL_RUNNER_H_
#define SEMMOE_ENGINE_OFFLINE_PREFILL_RUNNER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/model/transformer.h"

namespace semmoe::engine::offline {

struct PromptResult {
  int index;                   // Order of Add().
  const std::vector<int32_t>& tokens;
  const float* last_logits;    // [vocab]
  // routing[l] holds this prompt's tokens at MoE layer l: ids/weights [tokens × k].
  std::vector<const int32_t*> expert_ids;
  std::vector<const float*> weights;
};

class PrefillRunner {
 public:
  using Callback = std::function<absl::Status(const PromptResult&)>;
  // Prompts are grouped until `max_batch_tokens` (a longer prompt runs alone).
  PrefillRunner(const model::Transformer& transformer, int max_batch_tokens, Callback callback)
      : transformer_(transformer), max_batch_tokens_(max_batch_tokens), callback_(callback) {}

  // Queues a prompt (runs a batch when the budget is reached). InvalidArgument if it is longer
  // than the model's positions.
  absl::Status Add(std::vector<int32_t> tokens);
  // Runs what is queued.
  absl::Status Flush();

 private:
  const model::Transformer& transformer_;
  const int max_batch_tokens_;
  Callback callback_;
  std::vector<std::vector<int32_t>> pending_;
  int pending_tokens_ = 0;
  int next_index_ = 0;
};

}  // namespace semmoe::engine::offline

#endif  // SEMMOE_ENGINE_OFFLINE_PREFILL_RUNNER_H_
