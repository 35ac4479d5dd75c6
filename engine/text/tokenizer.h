// Byte-level BPE tokenizer read from a Hugging Face `tokenizer.json` (GPT-2/Qwen2/Qwen3/DeepSeek
// style).
//
// Supported: normalizer null, NFC or an empty Sequence; pre_tokenizer
// Sequence[Split(Qwen2 pattern, Isolated), ByteLevel(use_regex=false)] or DeepSeek-V3's
// Sequence[Split × 3 (its patterns, Isolated), ByteLevel(use_regex=false)] (pretokenizer.h; a
// bare ByteLevel pre-tokenizer means GPT-2's pattern, which is not implemented and is refused);
// model BPE with `vocab`, `merges` as "a b" strings or ["a", "b"] pairs, no dropout, no unk token,
// no byte fallback; `added_tokens` (special or not) matched on the raw text before normalisation,
// longest first. Anything else is an InvalidArgument naming the field, so a tokenizer we would get
// wrong is refused at load, not at serving time.
//
// Thread-safety: immutable after construction; Encode/Decode are safe from several threads.
#ifndef SEMMOE_ENGINE_TEXT_TOKENIZER_H_
#define SEMMOE_ENGINE_TEXT_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/text/byte_trie.h"
#include "engine/text/pretokenizer.h"

namespace semmoe::engine::model {

class Tokenizer {
 public:
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromJson(absl::string_view json_text);
  // Reads `<dir>/tokenizer.json`.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromDirectory(const std::string& dir);

  struct EncodeOptions {
    // Match added tokens (e.g. "<|im_end|>") in the text. Off: they are encoded as plain text.
    bool parse_special = true;
    // Byte ranges [first, second) of the text, sorted and apart, in which a special token's
    // text is encoded as the text it is, not as the control token (Hugging Face's
    // split_special_tokens for part of the text: a chat message's content). Non-special added
    // tokens (Qwen3's <think>) still match there, as they do in Hugging Face.
    std::vector<std::pair<size_t, size_t>> literal_spans;
  };
  // InvalidArgument if `text` is not valid UTF-8 or the literal spans are not sorted, apart and
  // inside it.
  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text,
                                              const EncodeOptions& options) const;
  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text) const {
    return Encode(text, EncodeOptions{});
  }

  // The bytes the ids stand for (may end inside a UTF-8 sequence; see CompleteUtf8Prefix).
  // Ids outside the vocabulary are InvalidArgument.
  absl::StatusOr<std::string> Decode(const std::vector<int32_t>& ids,
                                     bool skip_special = false) const;

  // Number of ids (the largest id + 1, over vocabulary and added tokens).
  int vocab_size() const { return static_cast<int>(id_to_bytes_.size()); }
  // The most bytes one token stands for (added tokens' text included).
  int max_token_bytes() const { return max_token_bytes_; }
  std::optional<int32_t> TokenId(absl::string_view token_bytes) const;
  bool IsSpecial(int32_t id) const;
  // The texts of the special added tokens ("<|im_start|>", "<|endoftext|>", ...).
  std::vector<std::string> SpecialTokenTexts() const;

 private:
  Tokenizer() = default;
  absl::Status Load(absl::string_view json_text);
  void EncodeWord(absl::string_view bytes, std::vector<int32_t>& out) const;
  absl::Status EncodeOrdinary(absl::string_view text, std::vector<int32_t>& out) const;

  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  bool nfc_ = false;
  int max_token_bytes_ = 1;
  PretokenizerKind pretokenizer_ = PretokenizerKind::kQwen2;
  std::vector<std::string> id_to_bytes_;  // Raw bytes of each id ("" for holes).
  std::vector<bool> special_;             // Per id.
  absl::flat_hash_map<std::string, int32_t> bytes_to_id_;
  int32_t byte_ids_[256];  // The id of each single byte.
  absl::flat_hash_map<uint64_t, Merge> merges_;
  struct Added {
    std::string content;
    int32_t id;
  };
  std::vector<Added> added_;  // Longest content first.
  ByteTrie added_trie_;       // Their contents → their index in added_.
};

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_TOKENIZER_H_
