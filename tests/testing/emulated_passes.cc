#include "tests/testing/emulated_passes.h"

#include "gtest/gtest.h"

namespace semmoe::testing {

using engine::model::LogitsMode;
using engine::model::SequenceInput;

PagedSequences NewPagedSequences(const engine::model::ModelConfig& config, size_t count,
                                 int capacity) {
  PagedSequences out;
  auto cache = engine::runtime::PagedKvCache::Create({.num_layers = config.num_layers,
                                                      .shape = config.kv_shape(),
                                                      .page_size = 4,
                                                      .num_pages = 48});
  EXPECT_TRUE(cache.ok()) << cache.status();
  if (!cache.ok()) return out;
  out.cache = std::move(*cache);
  for (size_t s = 0; s < count; ++s) {
    out.seqs.push_back(out.cache->NewSequence());
    EXPECT_TRUE(out.cache->Reserve(*out.seqs.back(), capacity).ok());
  }
  return out;
}

std::vector<SequenceInput> PassBatch(int pass, const std::vector<std::vector<int32_t>>& prompts,
                                     const std::vector<int32_t>& next,
                                     const PagedSequences& sequences) {
  std::vector<SequenceInput> batch;
  for (size_t s = 0; s < prompts.size(); ++s) {
    engine::runtime::PagedSequence* kv = sequences.seqs[s].get();
    if (pass == 0) {
      batch.push_back({prompts[s], 0, kv, s == 1 ? LogitsMode::kAll : LogitsMode::kLast});
    } else {
      const int position = static_cast<int>(prompts[s].size()) + pass - 1;
      batch.push_back({absl::MakeConstSpan(&next[s], 1), position, kv, LogitsMode::kLast,
                       pass == 1 ? prompts[s].back() : next[s]});
    }
  }
  return batch;
}

}  // namespace semmoe::testing
