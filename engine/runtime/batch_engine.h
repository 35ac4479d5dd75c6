// BatchEngine: continuous batching on one rank.
//
// Every Step() runs one forward pass over a batch that mixes decode steps (one token each) and
// prefill chunks (chunked prefill: a long prompt is fed over several steps), up to
// `max_batch_tokens` tokens. Requests join as soon as there are KV pages and budget for them and
// leave as soon as they finish, so the batch changes every step. When the KV cache runs out, the
// most recently admitted request is preempted: its pages are freed and it is recomputed later
// from its prompt plus the tokens it already produced (results are unchanged by preemption).
//
// Stopping: an EOS id (unless ignore_eos), max_tokens, or a stop string in the output's text
// (which ends before the stop string; needs a tokenizer). With a tokenizer the output is decoded
// here, once, as it is generated (model::TextStream): each token event carries its piece of
// text, and the pieces joined are the result's text.
//
// Thread-safety: not thread-safe; one thread drives Submit() and Step(). The weights, the forward
// and the tokenizer must outlive the engine.
#ifndef SEMMOE_ENGINE_RUNTIME_BATCH_ENGINE_H_
#define SEMMOE_ENGINE_RUNTIME_BATCH_ENGINE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "engine/forward/cpu_forward.h"
#include "engine/model/forward_io.h"
#include "engine/model/weights.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/sampler.h"
#include "engine/text/text_stream.h"
#include "engine/text/tokenizer.h"

namespace semmoe::engine::runtime {

enum class FinishReason { kEos, kLength, kStop };
const char* FinishReasonName(FinishReason reason);  // "eos", "length", "stop".

struct GenerationRequest {
  std::string id;
  std::vector<int32_t> prompt;  // Non-empty.
  int max_tokens = 16;          // ≥ 0; 0 runs the prompt only.
  SamplingParams sampling;
  std::vector<std::string> stop;  // Stop strings; REQUIRES a tokenizer in Options.
  bool ignore_eos = false;
};

struct GenerationResult {
  std::string id;
  int prompt_tokens = 0;
  std::vector<int32_t> tokens;  // Generated ids (including a final EOS id).
  // The output's text (valid UTF-8; no special tokens; ends before a stop string): the token
  // events' pieces joined. Empty without a tokenizer.
  std::string text;
  FinishReason finish = FinishReason::kLength;
  int preemptions = 0;
  // Expert activations of its tokens that ran on the serving rank, and all of them (counted by
  // an Attention-DP rank of an expert-parallel group; 0 and 0 otherwise).
  int64_t local_activations = 0, activations = 0;
};

struct TokenEvent {
  std::string request_id;
  int32_t token;
  // The text this token completes (often "", e.g. for part of a character or of what may become
  // a stop string; the last token's carries what was held back).
  std::string text;
};

struct BatchEngineStats {
  int64_t steps = 0;
  int64_t prefill_tokens = 0;  // Includes recomputation after preemption.
  int64_t decode_tokens = 0;
  int64_t preemptions = 0;
  int64_t max_batch_size = 0;  // Most sequences in one step.
  int64_t mixed_steps = 0;     // Steps that ran prefill chunks and decode steps together.
};

class BatchEngine {
 public:
  // One forward pass over the batch's sequences (their pages are the engine's cache's).
  using ForwardFn =
      std::function<absl::StatusOr<model::ForwardOutput>(absl::Span<const model::SequenceInput>)>;

  struct Options {
    int max_batch_tokens = 256;  // Tokens per forward pass (> 0).
    int max_running = 64;        // Sequences in the batch (> 0).
    int max_waiting = 4096;      // Queue bound: Submit() answers ResourceExhausted beyond it.
    int page_size = 16;
    int64_t kv_cache_bytes = 256ll << 20;
    const model::Tokenizer* tokenizer = nullptr;  // For the text and stop strings.
    std::vector<int32_t> eos_ids;                 // Usually config.eos_token_ids.
    // Runs a forward pass (required by Create(config, options); Create(config, weights,
    // options) fills it with the engine's own CPU forward when null). Attention-TP's leader wraps
    // it to tell its followers the batch first (engine/server/tp_group.h).
    ForwardFn forward;
    // Step() runs a forward pass even when nothing is scheduled (an empty batch): the ranks of
    // an expert-parallel group must all run the same number of passes.
    bool forward_every_step = false;
  };

  // An engine over options.forward (required: INVALID_ARGUMENT without it), for a model of
  // `config` (the forward's: under Attention-TP the rank's heads).
  static absl::StatusOr<std::unique_ptr<BatchEngine>> Create(const model::ModelConfig& config,
                                                             const Options& options);
  // The CPU product's engine: options.forward if set, else the engine's own CPU forward over
  // `weights` (borrowed, outlive the engine; engine/forward/cpu_forward.h), which keeps the keys
  // and values in an arena of the cache's pages.
  static absl::StatusOr<std::unique_ptr<BatchEngine>> Create(const model::ModelConfig& config,
                                                             const model::ModelWeights& weights,
                                                             Options options);
  ~BatchEngine();

  // InvalidArgument for an empty prompt, a prompt + max_tokens longer than the model's positions
  // or the whole KV cache, bad sampling params, or stop strings without a tokenizer;
  // ResourceExhausted when the queue is full; AlreadyExists for a duplicate id in flight.
  absl::Status Submit(GenerationRequest request);

  // Drops a waiting or running request and frees its KV pages; false if `id` is not in flight.
  bool Cancel(const std::string& id);

  bool idle() const { return waiting_.empty() && running_.empty(); }
  int waiting() const { return static_cast<int>(waiting_.size()); }
  int running() const { return static_cast<int>(running_.size()); }

  // Schedules the next Step()'s batch (admits waiting requests, reserves their KV pages) and
  // returns its tokens, so that the ranks of a group can agree on every rank's pass size before
  // the pass (GroupEngine). Step() runs the batch planned last, or plans one itself. A Cancel()
  // in between drops the plan (Step() then plans anew).
  int64_t Plan();

  // One forward pass. Finished requests are appended to `finished`; every sampled token to
  // `tokens` if given. A forward error (Submit's validation should make one impossible) is
  // returned; the step's requests stay scheduled and no token is sampled.
  absl::Status Step(std::vector<GenerationResult>& finished,
                    std::vector<TokenEvent>* tokens = nullptr);

  // Steps until idle; results in completion order.
  absl::StatusOr<std::vector<GenerationResult>> RunUntilIdle();

  const BatchEngineStats& stats() const { return stats_; }
  const PagedKvCache& kv_cache() const { return *cache_; }

 private:
  struct Sequence;
  BatchEngine(const model::ModelConfig& config, const Options& options,
              std::unique_ptr<PagedKvCache> cache);
  bool ReserveOrPreempt(size_t index, int positions);
  void Preempt(size_t index);
  // Applies a sampled token; true if the sequence finished. `text`: the text it completes.
  bool Append(Sequence& seq, int32_t token, std::string& text);

  const model::ModelConfig config_;
  std::unique_ptr<forward::CpuForward> cpu_;  // The engine's own forward (options_.forward's).
  const Options options_;
  std::unique_ptr<PagedKvCache> cache_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // Admission order.
  // The next step's batch once planned (Plan): (sequence, tokens of it this step).
  std::optional<std::vector<std::pair<Sequence*, int>>> planned_;
  absl::flat_hash_set<std::string> in_flight_;
  BatchEngineStats stats_;
};

}  // namespace semmoe::engine::runtime

#endif  // SEMMOE_ENGINE_RUNTIME_BATCH_ENGINE_H_
