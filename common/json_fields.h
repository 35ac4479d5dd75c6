// Typed, exception-free reads of JSON object fields for the model file parsers. Errors name the
// file and the field ("config.json: hidden_size: expected an integer, got string").
#ifndef SEMMOE_COMMON_JSON_FIELDS_H_
#define SEMMOE_COMMON_JSON_FIELDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace semmoe {

// The deepest nesting of arrays and objects any JSON input may have. nlohmann's parser and
// destructor recurse per level: a line of 100,000 '[' overflows the stack (SIGSEGV). Every JSON
// this project reads goes through the functions below, which stop at the first bracket past the
// limit: a deeper document is never built.
inline constexpr int kMaxJsonDepth = 256;

// ParseOrderedJson's bound on object width: adding a key to an ordered_json object searches the
// keys before it, so an object of n keys costs n²/2 comparisons. The sum over a document's
// objects is capped at kMaxOrderedKeyWork — one object of about kMaxOrderedObjectKeys keys, or
// many smaller ones (real requests and tokenizer configs hold at most a few thousand).
inline constexpr int64_t kMaxOrderedObjectKeys = 16384;
inline constexpr int64_t kMaxOrderedKeyWork = kMaxOrderedObjectKeys * kMaxOrderedObjectKeys / 2;

// The deepest array/object nesting in `text` (strings skipped; linear, no allocation), counting
// only until it passes `stop_after`.
int JsonNestingDepth(absl::string_view text, int stop_after = kMaxJsonDepth);

// Parses `text` as JSON without exceptions, as a SAX parse that refuses the document at the
// first array or object opened deeper than `max_depth` (checked while parsing, never after), and
// (ordered) past kMaxOrderedKeyWork.
// InvalidArgument "<what>: invalid JSON: <parser's reason>" or "<what>: JSON nested deeper than
// N levels".
absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, absl::string_view what,
                                         int max_depth = kMaxJsonDepth);
absl::StatusOr<nlohmann::ordered_json> ParseOrderedJson(absl::string_view text,
                                                        absl::string_view what,
                                                        int max_depth = kMaxJsonDepth);

// As nlohmann's parse(text, nullptr, false): a discarded value for invalid JSON — and for JSON
// nested deeper than kMaxJsonDepth.
nlohmann::json ParseJsonOrDiscarded(absl::string_view text);
nlohmann::ordered_json ParseOrderedJsonOrDiscarded(absl::string_view text);

// Reads object fields. A field that is absent (or null) returns `fallback`, or InvalidArgument
// "missing" when there is none; a field of the wrong type or out of range is InvalidArgument.
class JsonFields {
 public:
  // REQUIRES: `object` outlives this. `what` prefixes errors (e.g. "config.json").
  JsonFields(const nlohmann::json& object, std::string what) : object_(object), what_(what) {}

  bool Has(absl::string_view key) const;
  absl::StatusOr<int64_t> Int(absl::string_view key, std::optional<int64_t> fallback = {},
                              int64_t min = INT32_MIN, int64_t max = INT32_MAX) const;
  absl::StatusOr<double> Number(absl::string_view key, std::optional<double> fallback = {}) const;
  absl::StatusOr<bool> Bool(absl::string_view key, std::optional<bool> fallback = {}) const;
  absl::StatusOr<std::string> String(absl::string_view key,
                                     std::optional<std::string> fallback = {}) const;
  // An integer or a list of integers (as for `eos_token_id`); absent → empty.
  absl::StatusOr<std::vector<int64_t>> IntOrIntList(absl::string_view key) const;

  absl::Status Error(absl::string_view key, absl::string_view message) const;

 private:
  const nlohmann::json* Find(absl::string_view key) const;

  const nlohmann::json& object_;
  std::string what_;
};

}  // namespace semmoe

#endif  // SEMMOE_COMMON_JSON_FIELDS_H_
