#include "engine/offline/prefill_runner.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace semmoe::engine::offline {

int PrefillPagesNeeded(int max_batch_tokens, int max_position, int page_size) {
  const int tokens = std::max(max_batch_tokens, max_position);
  // Every prompt has at least one token, so a pass holds at most `tokens` prompts.
  return (tokens + page_size - 1) / page_size + tokens;
}

absl::StatusOr<std::unique_ptr<runtime::PagedKvCache>> PrefillPageLender(
    const model::ModelConfig& config, int max_batch_tokens) {
  return runtime::PagedKvCache::Create(
      {.num_layers = config.num_layers,
       .shape = config.kv_shape(),
       .page_size = kPrefillPageSize,
       .num_pages =
           PrefillPagesNeeded(max_batch_tokens, config.max_position_embeddings, kPrefillPageSize)});
}

absl::Status PrefillRunner::Add(std::vector<int32_t> tokens) {
  const int max = config_.max_position_embeddings;
  if (static_cast<int>(tokens.size()) > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "prompt of ", tokens.size(), " tokens exceeds the model's ", max, " positions"));
  }
  if (pending_tokens_ + static_cast<int>(tokens.size()) > max_batch_tokens_) {
    RETURN_IF_ERROR(Flush());
  }
  pending_tokens_ += static_cast<int>(tokens.size());
  pending_.push_back(std::move(tokens));
  return absl::OkStatus();
}

absl::Status PrefillRunner::Flush() {
  if (pending_.empty()) return absl::OkStatus();
  if (!backend_.forward || backend_.cache == nullptr) {
    return absl::FailedPreconditionError("the prefill runner has no forward pass to run on");
  }
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;  // Their pages return at exit.
  std::vector<model::SequenceInput> batch;
  for (const auto& tokens : pending_) {
    seqs.push_back(backend_.cache->NewSequence());
    RETURN_IF_ERROR(backend_.cache->Reserve(*seqs.back(), static_cast<int>(tokens.size())));
    batch.push_back({tokens, 0, seqs.back().get(), model::LogitsMode::kLast});
  }
  ASSIGN_OR_RETURN(model::ForwardOutput out, backend_.forward(batch, {.collect_routing = true}));
  size_t token_offset = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    PromptResult result{next_index_++, pending_[i], out.logits.row(i).data(), {}, {}};
    for (const model::Routing& r : out.routing) {
      result.expert_ids.push_back(r.expert_ids.data() + token_offset * r.top_k);
      result.weights.push_back(r.weights.data() + token_offset * r.top_k);
    }
    RETURN_IF_ERROR(callback_(result));
    token_offset += pending_[i].size();
  }
  pending_.clear();
  pending_tokens_ = 0;
  return absl::OkStatus();
}

}  // namespace semmoe::engine::offline
