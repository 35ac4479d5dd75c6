// GPT-2's byte-level alphabet: the reversible map from the 256 byte values to printable code
// points that byte-level BPE tokenizer.json files spell their tokens in (space → 'Ġ', ...).
#ifndef SEMMOE_ENGINE_TEXT_BYTE_LEVEL_H_
#define SEMMOE_ENGINE_TEXT_BYTE_LEVEL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmoe::engine::model {

// The code point standing for `byte`.
char32_t ByteToCodePoint(unsigned char byte);

// Raw bytes → their tokenizer.json spelling (UTF-8).
std::string BytesToTokenText(absl::string_view bytes);

// tokenizer.json spelling → raw bytes; InvalidArgument for invalid UTF-8 or a character outside
// the alphabet.
absl::StatusOr<std::string> TokenTextToBytes(absl::string_view token);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_BYTE_LEVEL_H_
