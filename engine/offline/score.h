// `engine score`: final-position logits and routing for token-id inputs.
//
// Input JSONL, one object per line: {"id": string|int, "token_ids": [ints]}.
// Output JSONL, same order: {"id", "last_logits": [vocab floats],
//   "routing": [[[k expert ids] per token] per MoE layer]}.
// The output is written to `<out>.partial` and renamed when complete.
#ifndef SEMMOE_ENGINE_OFFLINE_SCORE_H_
#define SEMMOE_ENGINE_OFFLINE_SCORE_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/progress.h"
#include "engine/model/forward_io.h"
#include "engine/offline/prefill_runner.h"

namespace semmoe::engine::offline {

struct ScoreOptions {
  std::string input;
  std::string output;
  int max_batch_tokens = 2048;
  PrefillBackend backend;  // Required: where the passes run.
  Progress* progress = nullptr;  // Borrowed; when set, Add(1) per prompt done.
};

// Returns the number of lines scored. Errors name the input line at fault.
// `config`: the model's (borrowed).
absl::StatusOr<int> RunScore(const model::ModelConfig& config, const ScoreOptions& options);

}  // namespace semmoe::engine::offline

#endif  // SEMMOE_ENGINE_OFFLINE_SCORE_H_
