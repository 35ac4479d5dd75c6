// The Qwen2/Qwen3 pre-tokenizer: splits text into the pieces BPE then encodes separately.
//
// It is the regular expression Qwen2 and Qwen3 tokenizer.json files carry (Split, behavior
// Isolated), written as a hand-coded scanner because std::regex has no \p{L}:
//
//   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N} | ?[^\s\p{L}\p{N}]+[\r\n]* |
//   \s*[\r\n]+ | \s+(?!\S) | \s+
//
// Alternatives are tried in order at each position (leftmost-first, like Oniguruma/fancy-regex).
#ifndef SEMMOE_ENGINE_MODEL_PRETOKENIZER_H_
#define SEMMOE_ENGINE_MODEL_PRETOKENIZER_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "engine/model/unicode.h"

namespace semmoe::engine::model {

// The pattern string as it appears in tokenizer.json, for validation at load.
extern const char kQwen2PretokenizerPattern[];

// Splits decoded `text` into pieces; each piece is [begin, end) in code-point indices. The
// pieces cover the text exactly, in order.
struct Piece {
  size_t begin;
  size_t end;
};
std::vector<Piece> PretokenizeQwen2(const std::vector<CodePoint>& text);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_MODEL_PRETOKENIZER_H_
