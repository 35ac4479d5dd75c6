#include "engine/parallel/lockstep_greedy.h"

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace semmoe::engine {

absl::StatusOr<std::vector<GreedyOutput>> RunLockstepGreedy(
    const GreedyForwardFn& forward, runtime::PagedKvCache& pages,
    const std::vector<std::vector<int32_t>>& prompts, const LockstepGreedyOptions& options) {
  std::vector<std::unique_ptr<runtime::PagedSequence>> kv;
  for (const auto& p : prompts) {
    kv.push_back(pages.NewSequence());
    const absl::Status reserved =
        pages.Reserve(*kv.back(), static_cast<int>(p.size()) + options.decode_steps);
    if (!reserved.ok()) {
      return absl::Status(reserved.code(), absl::StrCat("greedy generation of ", prompts.size(),
                                                        " prompts with ", options.decode_steps,
                                                        " decode steps: ", reserved.message()));
    }
  }
  std::vector<GreedyOutput> out(prompts.size());
  std::vector<std::vector<int32_t>> next(prompts.size());
  std::vector<int32_t> last(prompts.size());  // The last token fed: the next one's predecessor.
  for (size_t i = 0; i < prompts.size(); ++i) last[i] = prompts[i].empty() ? -1 : prompts[i].back();
  for (int step = 0; step <= options.decode_steps; ++step) {
    std::vector<model::SequenceInput> batch;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const bool prefill = step == 0;
      batch.push_back(
          {.tokens = prefill ? absl::MakeConstSpan(prompts[i]) : absl::MakeConstSpan(next[i]),
           .start_position = prefill ? 0 : static_cast<int>(prompts[i].size()) + step - 1,
           .kv = kv[i].get(),
           .logits = model::LogitsMode::kLast,
           .prev_token = prefill ? -1 : last[i]});
    }
    auto result = forward(batch, {.collect_routing = options.routing != nullptr});
    if (!result.ok()) return result.status();
    if (options.routing != nullptr) options.routing->push_back(std::move(result->routing));
    for (size_t i = 0; i < prompts.size(); ++i) {
      const auto row = result->logits.row(i);
      if (options.keep_logits) out[i].logits.emplace_back(row.data(), row.data() + row.size());
      Eigen::Index best;
      row.maxCoeff(&best);
      out[i].tokens.push_back(static_cast<int32_t>(best));
      if (step > 0) last[i] = next[i][0];
      next[i] = {static_cast<int32_t>(best)};
    }
  }
  return out;
}

}  // namespace semmoe::engine
