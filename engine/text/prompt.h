// The one check of a generation request's prompt, shared by the engine's and the router's
// services (engine/server/engine_service.h, router/core/router_core.h), so both take and
// refuse the same requests with the same words.
#ifndef SEMMOE_ENGINE_TEXT_PROMPT_H_
#define SEMMOE_ENGINE_TEXT_PROMPT_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/text/tokenizer.h"

namespace semmoe::engine::model {

struct PromptLimits {
  const Tokenizer* tokenizer = nullptr;  // Borrowed; null: token-id prompts only.
  int vocab_size = 0;                    // Ids must be in [0, vocab_size).
  int max_prompt_tokens = 0;             // 0: no limit.
};

// The prompt's token ids, from `text` (tokenised) or `token_ids`, exactly one of them given, and
// `max_tokens` ≥ 0. INVALID_ARGUMENT naming the field otherwise: both or neither given, text
// without a tokenizer or that does not encode, an id outside the vocabulary, an empty prompt, a
// negative max_tokens. OUT_OF_RANGE for a prompt longer than `max_prompt_tokens` (a text too long
// to fit is refused from its size, before it is encoded). `literal_spans`: byte ranges of `text`
// whose special-token text is encoded as text (Tokenizer::EncodeOptions; a chat message's
// content); bad spans, or spans without text, are INVALID_ARGUMENT.
absl::StatusOr<std::vector<int32_t>> CheckPrompt(
    absl::string_view text, absl::Span<const int32_t> token_ids, int64_t max_tokens,
    const PromptLimits& limits, std::vector<std::pair<size_t, size_t>> literal_spans = {});

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_PROMPT_H_
