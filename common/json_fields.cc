#include "common/json_fields.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"

namespace semmoe {

int JsonNestingDepth(absl::string_view text, int stop_after) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > stop_after) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

namespace {

// nlohmann's DOM builder with a depth limit: returning false from a SAX event stops the parse
// there, so nothing deeper than `max_depth` is ever allocated (nor recursed into on
// destruction).
template <typename J>
class BoundedDomParser : public nlohmann::detail::json_sax_dom_parser<J> {
  using Base = nlohmann::detail::json_sax_dom_parser<J>;

 public:
  BoundedDomParser(J& result, int max_depth)
      : Base(result, /*allow_exceptions=*/false), max_depth_(max_depth) {}

  bool start_object(std::size_t n) {
    keys_.push_back(0);
    return Open() && Base::start_object(n);
  }
  bool start_array(std::size_t n) { return Open() && Base::start_array(n); }
  bool end_object() {
    --depth_;
    if (!keys_.empty()) keys_.pop_back();
    return Base::end_object();
  }
  // ordered_json's objects are vectors searched for each key as it is added: an object's keys
  // cost the square of their count. Bounded, so a body of 3 million keys is refused at once
  // rather than parsed for hours.
  bool key(typename J::string_t& k) {
    if constexpr (std::is_same_v<J, nlohmann::ordered_json>) {
      if (!keys_.empty()) key_work_ += keys_.back()++;
      if (key_work_ > kMaxOrderedKeyWork) {
        too_wide_ = true;
        return false;
      }
    }
    return Base::key(k);
  }
  bool end_array() {
    --depth_;
    return Base::end_array();
  }
  template <typename Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& e) {
    error_ = e.what();
    return Base::parse_error(position, token, e);
  }

  bool too_deep() const { return too_deep_; }
  bool too_wide() const { return too_wide_; }
  const std::string& error() const { return error_; }

 private:
  bool Open() {
    if (++depth_ <= max_depth_) return true;
    too_deep_ = true;
    return false;
  }

  const int max_depth_;
  int depth_ = 0;
  bool too_deep_ = false;
  bool too_wide_ = false;
  std::vector<int64_t> keys_;  // Keys so far of each open object.
  int64_t key_work_ = 0;       // Key comparisons the ordered objects have cost.
  std::string error_;
};

template <typename J>
absl::StatusOr<J> ParseBounded(absl::string_view text, absl::string_view what, int max_depth) {
  J result;
  BoundedDomParser<J> sax(result, max_depth);
  const bool ok = J::sax_parse(text.begin(), text.end(), &sax, nlohmann::json::input_format_t::json,
                               /*strict=*/true);
  if (sax.too_deep()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": JSON nested deeper than ", max_depth, " levels"));
  }
  if (sax.too_wide()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": JSON objects with too many keys (more than about ",
                     kMaxOrderedObjectKeys, " in one object, or as many in all)"));
  }
  if (!ok || sax.is_errored()) {
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 1, column 2:
    // syntax error while parsing value - invalid literal; last read: 'x'".
    std::string reason = sax.error();
    if (const size_t at = reason.find("] "); at != std::string::npos) reason.erase(0, at + 2);
    // It quotes the input ("last read: '...'"): bytes that are not printable ASCII become '?',
    // so the message is safe in any JSON or log it goes to.
    for (char& c : reason) {
      if (c < 0x20 || c > 0x7e) c = '?';
    }
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": invalid JSON", reason.empty() ? "" : ": ", reason));
  }
  return result;
}

}  // namespace

absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, absl::string_view what,
                                         int max_depth) {
  return ParseBounded<nlohmann::json>(text, what, max_depth);
}

absl::StatusOr<nlohmann::ordered_json> ParseOrderedJson(absl::string_view text,
                                                        absl::string_view what, int max_depth) {
  return ParseBounded<nlohmann::ordered_json>(text, what, max_depth);
}

nlohmann::json ParseJsonOrDiscarded(absl::string_view text) {
  absl::StatusOr<nlohmann::json> j = ParseJson(text, "");
  return j.ok() ? *std::move(j) : nlohmann::json(nlohmann::json::value_t::discarded);
}

nlohmann::ordered_json ParseOrderedJsonOrDiscarded(absl::string_view text) {
  absl::StatusOr<nlohmann::ordered_json> j = ParseOrderedJson(text, "");
  return j.ok() ? *std::move(j)
                : nlohmann::ordered_json(nlohmann::ordered_json::value_t::discarded);
}

const nlohmann::json* JsonFields::Find(absl::string_view key) const {
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(std::string(key));
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool JsonFields::Has(absl::string_view key) const { return Find(key) != nullptr; }

absl::Status JsonFields::Error(absl::string_view key, absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(what_, ": ", key, ": ", message));
}

absl::StatusOr<int64_t> JsonFields::Int(absl::string_view key, std::optional<int64_t> fallback,
                                        int64_t min, int64_t max) const {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) {
    if (fallback.has_value()) return *fallback;
    return Error(key, "missing");
  }
  int64_t result;
  if (value->is_number_integer()) {
    result = value->get<int64_t>();
  } else if (value->is_number_float() && std::floor(value->get<double>()) == value->get<double>() &&
             std::abs(value->get<double>()) < 9e15) {
    result = static_cast<int64_t>(value->get<double>());
  } else {
    return Error(key, absl::StrCat("expected an integer, got ", value->type_name()));
  }
  if (result < min || result > max) {
    return Error(key, absl::StrCat("value ", result, " is outside [", min, ", ", max, "]"));
  }
  return result;
}

absl::StatusOr<double> JsonFields::Number(absl::string_view key,
                                          std::optional<double> fallback) const {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) {
    if (fallback.has_value()) return *fallback;
    return Error(key, "missing");
  }
  if (!value->is_number()) {
    return Error(key, absl::StrCat("expected a number, got ", value->type_name()));
  }
  double result = value->get<double>();
  if (!std::isfinite(result)) return Error(key, "not finite");
  return result;
}

absl::StatusOr<bool> JsonFields::Bool(absl::string_view key, std::optional<bool> fallback) const {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) {
    if (fallback.has_value()) return *fallback;
    return Error(key, "missing");
  }
  if (!value->is_boolean()) {
    return Error(key, absl::StrCat("expected true or false, got ", value->type_name()));
  }
  return value->get<bool>();
}

absl::StatusOr<std::string> JsonFields::String(absl::string_view key,
                                               std::optional<std::string> fallback) const {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) {
    if (fallback.has_value()) return *fallback;
    return Error(key, "missing");
  }
  if (!value->is_string()) {
    return Error(key, absl::StrCat("expected a string, got ", value->type_name()));
  }
  return value->get<std::string>();
}

absl::StatusOr<std::vector<int64_t>> JsonFields::IntOrIntList(absl::string_view key) const {
  const nlohmann::json* value = Find(key);
  std::vector<int64_t> out;
  if (value == nullptr) return out;
  if (value->is_number_integer()) {
    out.push_back(value->get<int64_t>());
    return out;
  }
  if (!value->is_array()) {
    return Error(key, absl::StrCat("expected an integer or a list, got ", value->type_name()));
  }
  for (const auto& item : *value) {
    if (!item.is_number_integer()) return Error(key, "expected a list of integers");
    out.push_back(item.get<int64_t>());
  }
  return out;
}

}  // namespace semmoe
