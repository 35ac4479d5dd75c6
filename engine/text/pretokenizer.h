// Pre-tokenizers: split text into the pieces BPE then encodes separately. Two are supported,
// each recognised by the exact Split regexes its tokenizer.json carries:
//
// Qwen2/Qwen3:
// It is the regular expression Qwen2 and Qwen3 tokenizer.json files carry (Split, behavior
// Isolated), written as a hand-coded scanner because std::regex has no \p{L}:
//
//   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N} | ?[^\s\p{L}\p{N}]+[\r\n]* |
//   \s*[\r\n]+ | \s+(?!\S) | \s+
//
// Alternatives are tried in order at each position (leftmost-first, like Oniguruma/fancy-regex).
//
// DeepSeek-V3 (also DeepSeek-V2's and R1's tokenizer.json): three Splits (behavior Isolated)
// applied in sequence, each to every piece the previous one produced:
//   1. \p{N}{1,3}                         digits in runs of at most three
//   2. [\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+   runs of CJK ideographs and kana
//   3. [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+ | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ |
//       ?[\p{P}\p{S}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
// Text a Split's regex does not match stays a piece of its own ("Isolated").
#ifndef SEMMOE_ENGINE_TEXT_PRETOKENIZER_H_
#define SEMMOE_ENGINE_TEXT_PRETOKENIZER_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "engine/text/unicode.h"

namespace semmoe::engine::model {

// The pattern strings as they appear in tokenizer.json, for validation at load.
extern const char kQwen2PretokenizerPattern[];
extern const char* const kDeepseekV3PretokenizerPatterns[3];

enum class PretokenizerKind { kQwen2, kDeepseekV3 };

// Splits decoded `text` into pieces; each piece is [begin, end) in code-point indices. The
// pieces cover the text exactly, in order.
struct Piece {
  size_t begin;
  size_t end;
};
std::vector<Piece> PretokenizeQwen2(const std::vector<CodePoint>& text);
std::vector<Piece> PretokenizeDeepseekV3(const std::vector<CodePoint>& text);
std::vector<Piece> Pretokenize(PretokenizerKind kind, const std::vector<CodePoint>& text);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_PRETOKENIZER_H_
