#include "engine/forward/batch_layout.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace semmoe::engine::forward {

absl::StatusOr<BatchLayout> LayOutBatch(absl::Span<const model::SequenceInput> batch, int page_size,
                                        int num_pages) {
  BatchLayout b;
  for (const model::SequenceInput& seq : batch) {
    b.max_pages = std::max(b.max_pages, static_cast<int>(seq.kv->page_table().size()));
  }
  b.page_table.assign(batch.size() * static_cast<size_t>(b.max_pages), 0);
  int64_t row = 0;
  for (size_t s = 0; s < batch.size(); ++s) {
    const model::SequenceInput& seq = batch[s];
    absl::Span<const int32_t> pages = seq.kv->page_table();
    if (pages.empty() || static_cast<int64_t>(pages.size()) * page_size != seq.kv->capacity()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sequence ", s, ": the forward needs a paged KV sequence with pages of ",
                       page_size, " positions (engine/runtime/kv_cache.h)"));
    }
    for (size_t p = 0; p < pages.size(); ++p) {
      if (pages[p] < 0 || pages[p] >= num_pages) {
        return absl::InvalidArgumentError(absl::StrCat("sequence ", s, ": page ", pages[p],
                                                       " is outside the forward's cache of ",
                                                       num_pages, " pages"));
      }
      b.page_table[s * b.max_pages + p] = pages[p];
    }
    const int64_t n = static_cast<int64_t>(seq.tokens.size());
    for (int64_t t = 0; t < n; ++t) {
      b.ids.push_back(seq.tokens[t]);
      b.positions.push_back(seq.start_position + static_cast<int32_t>(t));
      b.seq_of_token.push_back(static_cast<int32_t>(s));
      if (seq.logits == model::LogitsMode::kAll ||
          (seq.logits == model::LogitsMode::kLast && t == n - 1)) {
        b.logit_rows.push_back(static_cast<int32_t>(row + t));
      }
    }
    row += n;
  }
  return b;
}

int DecodeBucket(absl::Span<const model::SequenceInput> batch, int max_batch) {
  if (batch.empty()) return 0;
  for (const model::SequenceInput& s : batch) {
    if (s.tokens.size() != 1 || s.logits != model::LogitsMode::kLast) return 0;
  }
  int bucket = 1;
  while (bucket < static_cast<int>(batch.size())) bucket *= 2;
  return bucket <= max_batch ? bucket : 0;
}

absl::Status PadDecodeLayout(BatchLayout& b, int bucket, int max_pages, int scratch_page) {
  const int n = static_cast<int>(b.ids.size());
  if (n > bucket) {
    return absl::InvalidArgumentError(absl::StrCat(n, " sequences exceed the bucket of ", bucket));
  }
  if (b.max_pages > max_pages) {
    return absl::InvalidArgumentError(
        absl::StrCat("a sequence has ", b.max_pages, " pages, over the graphs' ", max_pages));
  }
  std::vector<int32_t> table(static_cast<size_t>(bucket) * max_pages, 0);
  for (int s = 0; s < n; ++s) {
    std::copy_n(b.page_table.begin() + static_cast<int64_t>(s) * b.max_pages, b.max_pages,
                table.begin() + static_cast<int64_t>(s) * max_pages);
  }
  for (int s = n; s < bucket; ++s) {
    table[static_cast<size_t>(s) * max_pages] = scratch_page;
    b.ids.push_back(0);
    b.positions.push_back(0);
    b.seq_of_token.push_back(s);
    b.logit_rows.push_back(s);
  }
  b.page_table = std::move(table);
  b.max_pages = max_pages;
  return absl::OkStatus();
}

}  // namespace semmoe::engine::forward
