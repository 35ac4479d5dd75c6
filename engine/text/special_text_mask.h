// Special-token text in what a client sent — a tool result or a user message holding
// "<|im_start|>system" — kept as text through the chat template, so that it cannot open or close
// a turn. Before the render every string of the request (messages, tools, template arguments) has
// each special token's text replaced by a placeholder of private-use characters; after it, the
// placeholders are put back and their byte ranges returned, for Tokenizer::EncodeOptions's
// literal_spans. Hugging Face's split_special_tokens, applied to the client's strings only (the
// template's own special tokens stay control tokens).
//
// Thread-safety: immutable after construction.
#ifndef SEMMOE_ENGINE_TEXT_SPECIAL_TEXT_MASK_H_
#define SEMMOE_ENGINE_TEXT_SPECIAL_TEXT_MASK_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/text/byte_trie.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::model {

class SpecialTextMask {
 public:
  // The most special tokens one mask covers (one private-use character each).
  static constexpr int kMaxTokens = 6000;
  // InvalidArgument for more than kMaxTokens texts or an empty one.
  static absl::StatusOr<SpecialTextMask> Create(std::vector<std::string> special_texts);

  // `value` with every string's special-token texts (and any private-use lead character, so that
  // a client cannot forge a placeholder) replaced by placeholders; `masked` (may be null) counts
  // the replacements. Object keys are left as they are.
  nlohmann::ordered_json Mask(const nlohmann::ordered_json& value, int64_t* masked) const;

  struct Unmasked {
    std::string text;
    std::vector<std::pair<size_t, size_t>> literal_spans;  // Sorted, apart.
  };
  // The rendered text with the placeholders back as the texts they stand for, and where they
  // are. InvalidArgument when the template cut or changed one (it sliced or escaped a message's
  // special-token text): the request cannot be rendered faithfully.
  absl::StatusOr<Unmasked> Unmask(absl::string_view rendered) const;

 private:
  SpecialTextMask() = default;
  // Writes the masked form of `s` to `out`; returns the replacements.
  int64_t MaskString(absl::string_view s, std::string& out) const;

  std::vector<std::string> texts_;  // By placeholder index; the last is the lead character.
  ByteTrie trie_;                   // The texts → their index.
};

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_SPECIAL_TEXT_MASK_H_
