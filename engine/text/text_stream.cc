#include "engine/text/text_stream.h"

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "engine/text/unicode.h"

namespace semmoe::engine::model {

TextStream::TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop)
    : tokenizer_(tokenizer), stop_(std::move(stop)) {
  for (const std::string& s : stop_) longest_stop_ = std::max(longest_stop_, s.size());
}

absl::StatusOr<std::string> TextStream::Add(absl::Span<const int32_t> ids) {
  if (stopped_ || finished_) return std::string();
  // Decoding is per-token bytes, concatenated: only the new tokens are decoded.
  absl::StatusOr<std::string> bytes =
      tokenizer_.Decode(std::vector<int32_t>(ids.begin(), ids.end()), /*skip_special=*/true);
  if (!bytes.ok()) return bytes.status();
  raw_ += *bytes;
  // Up to the last complete character, invalid bytes replaced (U+FFFD). Each converted piece
  // starts where a complete character ended, so converting piece by piece equals converting
  // the whole.
  const size_t complete = CompleteUtf8Prefix(raw_);
  if (complete > converted_) {
    text_ += ToValidUtf8(absl::string_view(raw_).substr(converted_, complete - converted_));
    converted_ = complete;
  }
  size_t ready = text_.size();
  // Cut at the first stop string; hold back a tail that may still become one. Nothing sent
  // can hold the start of one (it would have been held back), so the search starts near the
  // end of what was sent.
  const size_t from = sent_.size() >= longest_stop_ ? sent_.size() - longest_stop_ + 1 : 0;
  for (const std::string& s : stop_) {
    const size_t at = text_.find(s, from);
    if (at != std::string::npos && at < ready) {
      ready = at;
      stopped_ = true;
    }
  }
  if (!stopped_) {
    const absl::string_view done = absl::string_view(text_).substr(0, ready);
    size_t hold = 0;
    for (const std::string& s : stop_) {
      for (size_t k = std::min(s.size() - 1, ready); k > hold; --k) {
        if (absl::EndsWith(done, absl::string_view(s).substr(0, k))) {
          hold = k;
          break;
        }
      }
    }
    ready -= hold;
  }
  if (ready <= sent_.size()) return std::string();
  std::string piece = text_.substr(sent_.size(), ready - sent_.size());
  sent_ += piece;
  return piece;
}

std::string TextStream::Finish() {
  if (stopped_ || finished_) return std::string();
  finished_ = true;
  // An incomplete character at the very end is invalid: U+FFFD, as anywhere else.
  text_ += ToValidUtf8(absl::string_view(raw_).substr(converted_));
  converted_ = raw_.size();
  std::string rest = text_.substr(sent_.size());
  sent_ = text_;
  return rest;
}

}  // namespace semmoe::engine::model
