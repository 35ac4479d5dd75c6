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

// Parses `text` as JSON without exceptions; InvalidArgument "<what>: invalid JSON ..." on error.
absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, absl::string_view what);

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
