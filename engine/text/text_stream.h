// A request's output as text, decoded once, as it is generated: the engine's batch loop feeds it
// each sampled token, stops the request when a stop string appears, and sends the pieces it
// returns to the client (streamed or joined into the final text: both are the same bytes).
//
// - Work per token is the token's, not the output's: only the new token is decoded, and the stop
//   strings are searched for near the end.
// - Characters spread over several tokens come out whole; bytes that are not UTF-8 become
//   U+FFFD. Special tokens (EOS) are not text.
// - Held back until decided: an incomplete UTF-8 tail, and a tail that could be the start of a
//   stop string. Nothing from a stop string on is ever returned.
// - Finish() releases what was held back when the output ends for another reason (EOS, length).
//
// The one stop-string rule of the product: a stop string ends the output where it first occurs
// in the text (as validated UTF-8), and the text ends before it.
//
// Not thread-safe: one per request.
#ifndef SEMMOE_ENGINE_TEXT_TEXT_STREAM_H_
#define SEMMOE_ENGINE_TEXT_TEXT_STREAM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/text/tokenizer.h"

namespace semmoe::engine::model {

class TextStream {
 public:
  // REQUIRES: `tokenizer` outlives this; no stop string is empty.
  TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop);

  // The new text after `ids` more tokens ("" when all of it is held back, and after a stop
  // string or Finish). InvalidArgument for an id outside the vocabulary.
  absl::StatusOr<std::string> Add(absl::Span<const int32_t> ids);
  // The output ended without a stop string: what was held back (an incomplete character as
  // U+FFFD). "" after a stop string, and on a second call.
  std::string Finish();

  // A stop string has appeared: the output is complete.
  bool stopped() const { return stopped_; }
  // All the text returned so far (after Finish or a stop string: the whole output's text).
  const std::string& text() const { return sent_; }

 private:
  const Tokenizer& tokenizer_;
  const std::vector<std::string> stop_;
  size_t longest_stop_ = 0;
  std::string raw_;       // The output's bytes so far.
  size_t converted_ = 0;  // raw_[0, converted_) is in text_.
  std::string text_;      // Its complete characters, invalid bytes as U+FFFD.
  std::string sent_;      // A prefix of text_.
  bool stopped_ = false;
  bool finished_ = false;
};

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_TEXT_STREAM_H_
