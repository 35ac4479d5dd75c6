#include "router/openai/request_fields.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace semmoe::router::openai {

using Json = nlohmann::ordered_json;

const std::string* AsString(const Json& v) { return v.get_ptr<const std::string*>(); }

std::optional<bool> AsBool(const Json& v) {
  if (const bool* b = v.get_ptr<const bool*>()) return *b;
  return std::nullopt;
}

// nlohmann's get_ptr<int64_t*> answers for unsigned values too (is_number_integer() is true for
// both), reading the union as signed: the type is checked first.
std::optional<int64_t> AsInt(const Json& v) {
  if (v.type() == Json::value_t::number_integer) return *v.get_ptr<const int64_t*>();
  if (v.type() == Json::value_t::number_unsigned) {
    const uint64_t u = *v.get_ptr<const uint64_t*>();
    if (u <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(u);
  }
  return std::nullopt;
}

std::optional<double> AsNumber(const Json& v) {
  if (v.type() == Json::value_t::number_float) return *v.get_ptr<const double*>();
  if (v.type() == Json::value_t::number_unsigned) {
    return static_cast<double>(*v.get_ptr<const uint64_t*>());
  }
  if (v.type() == Json::value_t::number_integer) {
    return static_cast<double>(*v.get_ptr<const int64_t*>());
  }
  return std::nullopt;
}

const char* JsonTypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::string:
      return "string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::object:
      return "object";
    case Json::value_t::array:
      return "array";
    default:
      return "value";
  }
}

RequestFields::RequestFields(const Json& object, std::string path)
    : object_(object), path_(std::move(path)) {}

std::string RequestFields::Param(const std::string& key) const {
  return path_.empty() ? key : absl::StrCat(path_, ".", key);
}

const Json* RequestFields::Find(const std::string& key) const {
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool RequestFields::Has(const std::string& key) const { return Find(key) != nullptr; }

ApiError RequestFields::Invalid(const std::string& key, const std::string& message) const {
  return ApiError{.http_status = 400, .message = message, .param = Param(key)};
}

ApiError RequestFields::WrongType(const std::string& key, const char* wanted) const {
  const Json* v = Find(key);
  return Invalid(key, absl::StrCat("'", Param(key), "' must be ", wanted, ", got ",
                                   v != nullptr ? JsonTypeName(*v) : "null"));
}

std::optional<ApiError> RequestFields::String(const std::string& key, std::string* out) const {
  const Json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  const std::string* s = AsString(*v);
  if (s == nullptr) return WrongType(key, "a string");
  *out = *s;
  return std::nullopt;
}

std::optional<ApiError> RequestFields::Bool(const std::string& key, bool* out) const {
  const Json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  const std::optional<bool> b = AsBool(*v);
  if (!b.has_value()) return WrongType(key, "a boolean");
  *out = *b;
  return std::nullopt;
}

std::optional<ApiError> RequestFields::Int(const std::string& key, int64_t lo, int64_t hi,
                                           int64_t* out) const {
  const Json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer() && !v->is_number_unsigned()) return WrongType(key, "an integer");
  const std::optional<int64_t> i = AsInt(*v);
  if (!i.has_value()) return Invalid(key, absl::StrCat("'", Param(key), "' is out of range"));
  if (*i < lo || *i > hi) {
    return Invalid(key, absl::StrCat("'", Param(key), "' must be between ", lo, " and ", hi,
                                     ", got ", *i));
  }
  *out = *i;
  return std::nullopt;
}

std::optional<ApiError> RequestFields::Number(const std::string& key, double lo, double hi,
                                              double* out) const {
  const Json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  const std::optional<double> d = AsNumber(*v);
  if (!d.has_value()) return WrongType(key, "a number");
  if (!(*d >= lo && *d <= hi)) {
    return Invalid(key, absl::StrCat("'", Param(key), "' must be between ", lo, " and ", hi,
                                     ", got ", *d));
  }
  *out = *d;
  return std::nullopt;
}

std::optional<ApiError> RequestFields::Object(const std::string& key, const Json** out) const {
  const Json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_object()) return WrongType(key, "an object");
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> RequestFields::Array(const std::string& key, const Json** out) const {
  const Json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_array()) return WrongType(key, "an array");
  *out = v;
  return std::nullopt;
}

}  // namespace semmoe::router::openai
