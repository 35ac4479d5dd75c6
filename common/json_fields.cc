#include "common/json_fields.h"

#include <algorithm>
#include <cmath>

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

absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, absl::string_view what) {
  if (JsonNestingDepth(text) > kMaxJsonDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": JSON nested deeper than ", kMaxJsonDepth, " levels"));
  }
  nlohmann::json parsed = nlohmann::json::parse(text.begin(), text.end(), /*cb=*/nullptr,
                                                /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": invalid JSON"));
  }
  return parsed;
}

nlohmann::json ParseJsonOrDiscarded(absl::string_view text) {
  if (JsonNestingDepth(text) > kMaxJsonDepth) return nlohmann::json::value_t::discarded;
  return nlohmann::json::parse(text.begin(), text.end(), /*cb=*/nullptr,
                               /*allow_exceptions=*/false);
}

nlohmann::ordered_json ParseOrderedJsonOrDiscarded(absl::string_view text) {
  if (JsonNestingDepth(text) > kMaxJsonDepth) return nlohmann::ordered_json::value_t::discarded;
  return nlohmann::ordered_json::parse(text.begin(), text.end(), /*cb=*/nullptr,
                                       /*allow_exceptions=*/false);
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
