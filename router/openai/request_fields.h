// Checked reads of a request's JSON for the OpenAI door: the one way the door reads a field a
// client sent. Nothing here throws: nlohmann's typed access (`value()`, `get<T>()`, `at()`, the
// `operator[]` conversions) throws `type_error` on a field of the wrong type, and an exception
// escaping an HTTP worker used to end the router (std::terminate). `tools/check_json_access.sh`
// keeps raw typed access out of router/ and common/ outside this file and common/json_fields.
//
// Every error is an ApiError (400) naming the field by its path ("messages[2].tool_calls[0].id")
// and the type it wanted: "'response_format.type' must be a string, got number".
#ifndef SEMMOE_ROUTER_OPENAI_REQUEST_FIELDS_H_
#define SEMMOE_ROUTER_OPENAI_REQUEST_FIELDS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "nlohmann/json.hpp"
#include "router/openai/api_error.h"

namespace semmoe::router::openai {

// A JSON value's own reads, none of which throws: null when it is not of that type.
const std::string* AsString(const nlohmann::ordered_json& v);
std::optional<bool> AsBool(const nlohmann::ordered_json& v);
// An integer in int64 (integral floats are not integers here, as for OpenAI).
std::optional<int64_t> AsInt(const nlohmann::ordered_json& v);
std::optional<double> AsNumber(const nlohmann::ordered_json& v);
// "string", "number", "object", ... as errors name a type.
const char* JsonTypeName(const nlohmann::ordered_json& v);

// The fields of one object of a request. A field that is absent or null reads as absent: the
// out-parameter is left as it was. A present field of the wrong type, or out of range, is an
// ApiError naming it. REQUIRES: `object` outlives this.
class RequestFields {
 public:
  // `path`: where the object is in the request ("" for the body, "messages[0]", "tools[1].function").
  RequestFields(const nlohmann::ordered_json& object, std::string path);

  // The field's path as errors name it: "messages[0].role" (the key alone for the body).
  std::string Param(const std::string& key) const;
  bool Has(const std::string& key) const;  // Present and not null.
  // The field, or null when absent or null. Only for checks that do not throw (type tests,
  // comparisons with ==).
  const nlohmann::ordered_json* Find(const std::string& key) const;
  // An object must be one for its fields to be read: false when `object` is not an object.
  bool is_object() const { return object_.is_object(); }

  std::optional<ApiError> String(const std::string& key, std::string* out) const;
  std::optional<ApiError> Bool(const std::string& key, bool* out) const;
  std::optional<ApiError> Int(const std::string& key, int64_t lo, int64_t hi, int64_t* out) const;
  std::optional<ApiError> Number(const std::string& key, double lo, double hi, double* out) const;
  // Absent: *out stays null.
  std::optional<ApiError> Object(const std::string& key,
                                 const nlohmann::ordered_json** out) const;
  std::optional<ApiError> Array(const std::string& key, const nlohmann::ordered_json** out) const;

  // "'<param>' must be <wanted>, got <type>" for the field `key`.
  ApiError WrongType(const std::string& key, const char* wanted) const;
  ApiError Invalid(const std::string& key, const std::string& message) const;

 private:
  const nlohmann::ordered_json& object_;
  const std::string path_;
};

}  // namespace semmoe::router::openai

#endif  // SEMMOE_ROUTER_OPENAI_REQUEST_FIELDS_H_
