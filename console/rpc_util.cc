#include "console/rpc_util.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "google/protobuf/util/json_util.h"

namespace semmoe::console {

// One line: which service, what it said.
absl::Status Rpc(const grpc::Status& s, const std::string& service, const std::string& address) {
  if (s.ok()) return absl::OkStatus();
  std::string message = s.error_message();
  std::replace(message.begin(), message.end(), '\n', ' ');
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
      s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::UnavailableError(
        absl::StrCat("the ", service, " at ", address, " is unreachable (", message, ")"));
  }
  if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
      s.error_code() == grpc::StatusCode::PERMISSION_DENIED) {  // Say it is about credentials.
    const auto code = static_cast<absl::StatusCode>(s.error_code());
    return absl::Status(code,
                        absl::StrCat(service, ": ", absl::StatusCodeToString(code), ": ", message));
  }
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(service, ": ", message));
}

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

absl::StatusOr<int64_t> Number(const std::string& word, const char* what) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(word, &n) || n <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", word, "' is not a positive number"));
  }
  return n;
}

std::string Time(int64_t unix_micros) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMicros(unix_micros),
                          absl::UTCTimeZone());
}

double Get(const nlohmann::json& j, const char* key, const char* sub) {
  if (!j.is_object() || !j.contains(key)) return 0;
  const nlohmann::json& v = sub == nullptr ? j[key] : j[key].value(sub, nlohmann::json());
  return v.is_number() ? v.get<double>() : 0;
}

}  // namespace semmoe::console
