#include "console/endpoints.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/json_fields.h"
#include "common/status_macros.h"

namespace semmoe::console {
namespace {

// "" or HOST:PORT with a port in 1..65535.
absl::Status CheckAddress(const std::string& address, const JsonFields& f, absl::string_view key) {
  if (address.empty()) return absl::OkStatus();
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 1 || port > 65535) {
    return f.Error(key, absl::StrCat("'", address, "' is not HOST:PORT"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Address(const JsonFields& f, absl::string_view key) {
  ASSIGN_OR_RETURN(std::string address, f.String(key, ""));
  RETURN_IF_ERROR(CheckAddress(address, f, key));
  return address;
}

}  // namespace

absl::StatusOr<Endpoints> ParseEndpoints(absl::string_view text, absl::string_view path) {
  ASSIGN_OR_RETURN(const nlohmann::json j, ParseJson(text, path));
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  }
  const JsonFields f(j, std::string(path));
  Endpoints e;
  ASSIGN_OR_RETURN(e.planner, Address(f, "planner"));
  ASSIGN_OR_RETURN(e.router, Address(f, "router"));
  ASSIGN_OR_RETURN(e.http, Address(f, "http"));
  if (!f.Has("engines")) return e;
  const nlohmann::json& engines = j["engines"];
  if (!engines.is_array()) return f.Error("engines", "expected a list");
  for (size_t i = 0; i < engines.size(); ++i) {
    const std::string what = absl::StrCat(path, ": engines[", i, "]");
    if (!engines[i].is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": expected an object"));
    }
    const JsonFields ef(engines[i], what);
    Endpoints::Engine engine;
    ASSIGN_OR_RETURN(const int64_t rank, ef.Int("rank", std::nullopt, 0, 1 << 20));
    engine.rank = static_cast<int>(rank);
    ASSIGN_OR_RETURN(engine.address, ef.String("address"));
    RETURN_IF_ERROR(CheckAddress(engine.address, ef, "address"));
    ASSIGN_OR_RETURN(engine.metrics, Address(ef, "metrics"));
    ASSIGN_OR_RETURN(engine.arm, ef.String("arm", ""));
    ASSIGN_OR_RETURN(engine.accepts_requests, ef.Bool("accepts_requests", true));
    e.engines.push_back(std::move(engine));
  }
  return e;
}

}  // namespace semmoe::console
