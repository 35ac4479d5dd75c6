// `engine trace`: runs prompts through the model and writes their routing trace
// (planner/trace/trace_format.h).
//
// Input JSONL: {"id": string|int, "text": "..."} (tokenised, special tokens parsed) or
// {"id", "token_ids": [...]}. Each prompt runs from position 0, prefill only.
#ifndef SEMMOE_ENGINE_OFFLINE_TRACE_RUN_H_
#define SEMMOE_ENGINE_OFFLINE_TRACE_RUN_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/progress.h"
#include "engine/model/forward_io.h"
#include "engine/offline/prefill_runner.h"
#include "engine/text/tokenizer.h"

namespace semmoe::engine::offline {

struct TraceOptions {
  std::string prompts;
  std::string output;
  int max_batch_tokens = 2048;
  // Prompts longer than this are cut to their first tokens (0: the model's positions).
  int max_prompt_tokens = 0;
  PrefillBackend backend;        // Required: where the passes run.
  Progress* progress = nullptr;  // Borrowed; when set, Add(1) per prompt done.
};

struct TraceSummary {
  int prompts = 0;
  int64_t tokens = 0;
};

// `config`: the model's. `tokenizer` may be null when every line has token_ids. Errors name the
// input line at fault.
absl::StatusOr<TraceSummary> RunTrace(const model::ModelConfig& config,
                                      const model::Tokenizer* tokenizer,
                                      const TraceOptions& options);

}  // namespace semmoe::engine::offline

#endif  // SEMMOE_ENGINE_OFFLINE_TRACE_RUN_H_
