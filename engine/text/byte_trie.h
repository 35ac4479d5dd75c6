// A trie over byte strings: every key that starts a text at a position, found in one walk of at
// most the longest key's bytes (a scan of every key at each position was quadratic in practice:
// DeepSeek-V3 has about 800 added tokens, all starting "<｜"). For the tokenizer's added tokens
// and the special-token mask (special_text_mask.h).
//
// Thread-safety: immutable once built; Matches is safe from several threads.
#ifndef SEMMOE_ENGINE_TEXT_BYTE_TRIE_H_
#define SEMMOE_ENGINE_TEXT_BYTE_TRIE_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace semmoe::engine::model {

class ByteTrie {
 public:
  ByteTrie() : value_(1, -1) {}
  // Adds `key` (non-empty) with `value` ≥ 0; a key added twice keeps its first value.
  void Add(absl::string_view key, int32_t value);
  // Whether some key starts with byte `b` (a cheap test before Matches).
  bool Starts(unsigned char b) const { return first_byte_[b]; }
  // Every key that `text` holds at `at`, as (length, value), shortest first, into `out`
  // (cleared first).
  void Matches(absl::string_view text, size_t at,
               std::vector<std::pair<size_t, int32_t>>& out) const;

 private:
  absl::flat_hash_map<uint64_t, int32_t> edges_;  // (node << 8 | byte) → child.
  std::vector<int32_t> value_;                    // Per node; −1: no key ends there.
  bool first_byte_[256] = {};
};

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_BYTE_TRIE_H_
