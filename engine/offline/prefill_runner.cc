#include "engine/offline/prefill_runner.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace semmoe::engine::offline {

absl::Status PrefillRunner::Add(std::vector<int32_t> tokens) {
  const int max = transformer_.config().max_position_embeddings;
  if (static_cast<int>(tokens.size()) > max) {
    return absl::InvalidArgumentError(absl::StrCat("prompt of ", tokens.size(),
                                                   " tokens exceeds the model's ", max,
                                                   " positions"));
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
  const model::ModelConfig& c = transformer_.config();
  std::vector<std::unique_ptr<model::DenseKvSequence>> kvs;
  std::vector<model::SequenceInput> batch;
  for (const auto& tokens : pending_) {
    kvs.push_back(std::make_unique<model::DenseKvSequence>(c.num_layers, c.kv_size(),
                                                           static_cast<int>(tokens.size())));
    batch.push_back({tokens, 0, kvs.back().get(), model::LogitsMode::kLast});
  }
  ASSIGN_OR_RETURN(model::ForwardOutput out,
                   transformer_.Forward(batch, {.collect_routing = true}));
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
