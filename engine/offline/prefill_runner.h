// Runs many prompts through the forward pass in token-budget batches (prefill only, no
// generation) and hands each prompt's final logits and routing to a callback. Shared by
// `engine score` and `engine trace`.
#ifndef SEMMOE_ENGINE_OFFLINE_PREFILL_RUNNER_H_
#define SEMMOE_ENGINE_OFFLINE_PREFILL_RUNNER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "engine/model/forward_io.h"
#include "engine/runtime/kv_cache.h"

namespace semmoe::engine::offline {

// Where the passes run: a forward that keeps its KV in an arena of its own (CpuForward,
// GpuTransformer) takes paged sequences; `cache` lends each pass its pages (released after it)
// and `forward` runs it. Both required (PrefillOn, below, owns a forward and its lender and makes
// one).
struct PrefillBackend {
  std::function<absl::StatusOr<model::ForwardOutput>(absl::Span<const model::SequenceInput>,
                                                     const model::ForwardOptions&)>
      forward;
  runtime::PagedKvCache* cache = nullptr;  // Borrowed.
};

// Pages a cache of `page_size` needs so that any pass of a PrefillRunner with this budget fits:
// its tokens (at most max(max_batch_tokens, max_position)) plus one partial page per prompt.
int PrefillPagesNeeded(int max_batch_tokens, int max_position, int page_size);

// The page size of a forward that keeps its own arena for a PrefillRunner (CpuPrefill,
// GpuPrefill), and the host cache that lends its pages (no arena): PrefillPagesNeeded of them.
inline constexpr int kPrefillPageSize = 16;
absl::StatusOr<std::unique_ptr<runtime::PagedKvCache>> PrefillPageLender(
    const model::ModelConfig& config, int max_batch_tokens);

// A forward that keeps its own arena for a PrefillRunner (anything with Forward(batch, options):
// CpuForward, GpuTransformer) with the host cache that lends its sequences the arena's pages:
// CpuPrefill (engine/offline/cpu_prefill.h), GpuPrefill (engine/gpu/gpu_prefill.h).
template <typename Forward>
class PrefillOn {
 public:
  // `create(num_pages, page_size)` returns the forward over an arena of that many pages for any
  // pass of `max_batch_tokens` (PrefillPagesNeeded of kPrefillPageSize); its errors are these.
  template <typename CreateForward>
  static absl::StatusOr<std::unique_ptr<PrefillOn>> Create(const model::ModelConfig& config,
                                                           int max_batch_tokens,
                                                           const CreateForward& create) {
    std::unique_ptr<PrefillOn> p(new PrefillOn());
    ASSIGN_OR_RETURN(p->pages_, PrefillPageLender(config, max_batch_tokens));
    ASSIGN_OR_RETURN(p->forward_, create(p->pages_->total_pages(), kPrefillPageSize));
    return p;
  }
  // For ScoreOptions/TraceOptions::backend; valid while this object lives.
  PrefillBackend backend() {
    return {.forward =
                [this](absl::Span<const model::SequenceInput> batch,
                       const model::ForwardOptions& options) {
                  return forward_->Forward(batch, options);
                },
            .cache = pages_.get()};
  }
  const Forward& forward() const { return *forward_; }

 private:
  PrefillOn() = default;
  std::unique_ptr<Forward> forward_;
  std::unique_ptr<runtime::PagedKvCache> pages_;
};

struct PromptResult {
  int index;  // Order of Add().
  const std::vector<int32_t>& tokens;
  const float* last_logits;  // [vocab]
  // routing[l] holds this prompt's tokens at MoE layer l: ids/weights [tokens × k].
  std::vector<const int32_t*> expert_ids;
  std::vector<const float*> weights;
};

class PrefillRunner {
 public:
  using Callback = std::function<absl::Status(const PromptResult&)>;
  // Prompts are grouped until `max_batch_tokens` (a longer prompt runs alone). `config`
  // borrowed; Flush() fails with FAILED_PRECONDITION when `backend` lacks its forward or cache.
  PrefillRunner(const model::ModelConfig& config, int max_batch_tokens, Callback callback,
                PrefillBackend backend)
      : config_(config),
        max_batch_tokens_(max_batch_tokens),
        callback_(std::move(callback)),
        backend_(std::move(backend)) {}

  // Queues a prompt (runs a batch when the budget is reached). InvalidArgument if it is longer
  // than the model's positions.
  absl::Status Add(std::vector<int32_t> tokens);
  // Runs what is queued.
  absl::Status Flush();

 private:
  const model::ModelConfig& config_;
  const int max_batch_tokens_;
  Callback callback_;
  PrefillBackend backend_;
  std::vector<std::vector<int32_t>> pending_;
  int pending_tokens_ = 0;
  int next_index_ = 0;
};

}  // namespace semmoe::engine::offline

#endif  // SEMMOE_ENGINE_OFFLINE_PREFILL_RUNNER_H_
