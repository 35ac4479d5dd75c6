#include "engine/text/prompt.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace semmoe::engine::model {

absl::StatusOr<std::vector<int32_t>> CheckPrompt(
    absl::string_view text, absl::Span<const int32_t> token_ids, int64_t max_tokens,
    const PromptLimits& limits, std::vector<std::pair<size_t, size_t>> literal_spans) {
  if (!text.empty() && !token_ids.empty()) {
    return absl::InvalidArgumentError("give either text or token_ids, not both");
  }
  if (text.empty() && !literal_spans.empty()) {
    return absl::InvalidArgumentError("literal_spans: only a text prompt has them");
  }
  std::vector<int32_t> prompt;
  if (!text.empty()) {
    if (limits.tokenizer == nullptr) {
      return absl::InvalidArgumentError("text prompts need a tokenizer; none is loaded");
    }
    // No token stands for more than max_token_bytes bytes, and NFC composition shrinks text at
    // most 3× (three Hangul jamo of 3 bytes each → one syllable of 3): a text longer than this
    // has more tokens than the limit, which encoding it (seconds for 30 MB) would only confirm.
    const int64_t most_bytes =
        int64_t{4} * limits.max_prompt_tokens * std::max(1, limits.tokenizer->max_token_bytes());
    if (limits.max_prompt_tokens > 0 && static_cast<int64_t>(text.size()) > most_bytes) {
      return absl::OutOfRangeError(absl::StrCat("the prompt's ", text.size(),
                                                " bytes are more than the model's limit of ",
                                                limits.max_prompt_tokens, " tokens can hold"));
    }
    absl::StatusOr<std::vector<int32_t>> ids =
        limits.tokenizer->Encode(text, {.literal_spans = std::move(literal_spans)});
    if (!ids.ok())
      return absl::InvalidArgumentError(absl::StrCat("text: ", ids.status().message()));
    prompt = std::move(*ids);
  } else {
    for (int32_t id : token_ids) {
      if (id < 0 || id >= limits.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat(
            "token_ids: ", id, " is outside the vocabulary [0, ", limits.vocab_size, ")"));
      }
    }
    prompt.assign(token_ids.begin(), token_ids.end());
  }
  if (prompt.empty()) return absl::InvalidArgumentError("the prompt is empty");
  if (limits.max_prompt_tokens > 0 &&
      static_cast<int64_t>(prompt.size()) > limits.max_prompt_tokens) {
    return absl::OutOfRangeError(absl::StrCat("the prompt has ", prompt.size(),
                                              " tokens; the limit is ", limits.max_prompt_tokens));
  }
  if (max_tokens < 0) return absl::InvalidArgumentError("max_tokens must be ≥ 0");
  return prompt;
}

}  // namespace semmoe::engine::model
