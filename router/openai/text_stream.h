// Turns a request's generated token ids into the text pieces a streaming client gets. The output
// is decoded as it grows (work per token is the token's, not the output's: characters spread over
// several tokens come out whole) and only what is new is sent; held back are an incomplete UTF-8
// tail and any tail that could be the start of a stop string, and nothing past a stop string is
// ever sent. Special tokens (EOS) are not text; bytes that are not UTF-8 become U+FFFD, as in the
// engine's text. At the end the engine's final text (cut at the stop string) is authoritative:
// Finish sends what is left of it.
//
// Not thread-safe: one per request.
#ifndef SEMMOE_ROUTER_OPENAI_TEXT_STREAM_H_
#define SEMMOE_ROUTER_OPENAI_TEXT_STREAM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/tokenizer.h"

namespace semmoe::router::openai {

class TextStream {
 public:
  // REQUIRES: `tokenizer` outlives this.
  TextStream(const engine::model::Tokenizer& tokenizer, std::vector<std::string> stop)
      : tokenizer_(tokenizer), stop_(std::move(stop)) {}

  // The new text after `ids` more tokens ("" when all of it is held back). InvalidArgument for
  // an id outside the vocabulary.
  absl::StatusOr<std::string> Add(absl::Span<const int32_t> ids);
  // What is left to send given the engine's final text. If that text does not extend what was
  // sent (it should), nothing more is sent and `consistent()` turns false.
  std::string Finish(const std::string& final_text);

  const std::string& sent() const { return sent_; }
  bool consistent() const { return consistent_; }

 private:
  const engine::model::Tokenizer& tokenizer_;
  const std::vector<std::string> stop_;
  std::string raw_;       // The output's bytes so far.
  size_t converted_ = 0;  // raw_[0, converted_) is in text_.
  std::string text_;      // Its complete characters, invalid bytes as U+FFFD.
  std::string sent_;      // A prefix of text_.
  bool stopped_ = false;
  bool consistent_ = true;
};

}  // namespace semmoe::router::openai

#endif  // SEMMOE_ROUTER_OPENAI_TEXT_STREAM_H_
