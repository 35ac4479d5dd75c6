#include "router/openai/text_stream.h"

#include "absl/strings/match.h"
#include "engine/model/unicode.h"

namespace semmoe::router::openai {

absl::StatusOr<std::string> TextStream::Add(absl::Span<const int32_t> ids) {
  if (stopped_) return std::string();
  for (int32_t id : ids) {
    if (!tokenizer_.IsSpecial(id)) ids_.push_back(id);
  }
  absl::StatusOr<std::string> decoded = tokenizer_.Decode(ids_, /*skip_special=*/true);
  if (!decoded.ok()) return decoded.status();
  // Up to the last complete character, with invalid bytes replaced as the engine's final text
  // has them (U+FFFD), so what is sent is always a prefix of that text.
  const std::string whole = engine::model::ToValidUtf8(
      absl::string_view(*decoded).substr(0, engine::model::CompleteUtf8Prefix(*decoded)));
  const std::string* text = &whole;
  size_t ready = whole.size();
  // Cut at the first stop string; hold back a tail that may still become one.
  for (const std::string& s : stop_) {
    const size_t at = text->find(s);
    if (at != std::string::npos && at < ready) {
      ready = at;
      stopped_ = true;
    }
  }
  if (!stopped_) {
    const absl::string_view done = absl::string_view(*text).substr(0, ready);
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
  if (ready <= sent_.size() || !absl::StartsWith(*text, sent_)) return std::string();
  std::string piece = text->substr(sent_.size(), ready - sent_.size());
  sent_ += piece;
  return piece;
}

std::string TextStream::Finish(const std::string& final_text) {
  if (!absl::StartsWith(final_text, sent_)) {
    consistent_ = false;
    return std::string();
  }
  std::string rest = final_text.substr(sent_.size());
  sent_ = final_text;
  stopped_ = true;
  return rest;
}

}  // namespace semmoe::router::openai
