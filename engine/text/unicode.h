// UTF-8 decoding, NFC normalisation and the character classes the tokenizers' pre-tokenizer
// patterns use (\p{L}, \p{N}, \p{M}, \p{P}, \p{S}, \s), backed by ICU.
#ifndef SEMMOE_ENGINE_TEXT_UNICODE_H_
#define SEMMOE_ENGINE_TEXT_UNICODE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmoe::engine::model {

struct CodePoint {
  char32_t value;
  size_t byte_offset;  // Of its first byte in the decoded text.
  size_t byte_length;
};

// Decodes strict UTF-8 (no overlongs, surrogates or values past U+10FFFF). InvalidArgument
// "invalid UTF-8 at byte N" otherwise.
absl::StatusOr<std::vector<CodePoint>> DecodeUtf8(absl::string_view text);

// `bytes` with every invalid byte replaced by U+FFFD (model output may split or invent byte
// sequences; protobuf strings and JSON must be valid UTF-8).
std::string ToValidUtf8(absl::string_view bytes);

// Appends the UTF-8 encoding of `c` (REQUIRES: a valid scalar value).
void AppendUtf8(char32_t c, std::string& out);

// Length of the longest prefix of `bytes` that is complete UTF-8 (an incomplete trailing
// sequence is held back); invalid bytes count as complete (they cannot become valid).
size_t CompleteUtf8Prefix(absl::string_view bytes);

// Unicode NFC. REQUIRES: valid UTF-8 (InvalidArgument otherwise).
absl::StatusOr<std::string> NormalizeNfc(absl::string_view text);

bool IsLetter(char32_t c);       // General category L*.
bool IsNumber(char32_t c);       // General category N*.
bool IsWhitespace(char32_t c);   // White_Space property (what \s matches).
bool IsMark(char32_t c);         // General category M*.
bool IsPunctuation(char32_t c);  // General category P*.
bool IsSymbol(char32_t c);       // General category S*.

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_UNICODE_H_
