// What the console's command files share: RPC errors as one-line statuses, protobuf as JSON,
// argument and time formatting, and the call macros (for Console members).
#ifndef SEMMOE_CONSOLE_RPC_UTIL_H_
#define SEMMOE_CONSOLE_RPC_UTIL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "planner/proto/planner.grpc.pb.h"
#include "router/proto/router.grpc.pb.h"

namespace semmoe::console {

namespace prpc = planner::rpc;
namespace rrpc = router::rpc;

// One line: which service, what it said (unreachable services name their address).
absl::Status Rpc(const grpc::Status& s, const std::string& service, const std::string& address);
std::string Json(const google::protobuf::Message& m);
// A positive number, else InvalidArgument naming `what`.
absl::StatusOr<int64_t> Number(const std::string& word, const char* what);
std::string Time(int64_t unix_micros);  // "YYYY-MM-DD HH:MM:SS" UTC.
// j[key] (or j[key][sub]) as a number; 0 if absent.
double Get(const nlohmann::json& j, const char* key, const char* sub = nullptr);

}  // namespace semmoe::console

#define SEMMOE_CALL(stub, method, request, response, service, address)                     \
  do {                                                                                     \
    grpc::ClientContext context_;                                                          \
    context_.set_deadline(absl::ToChronoTime(absl::Now() + o_.deadline));                  \
    absl::Status s_ = Rpc((stub)->method(&context_, request, response), service, address); \
    if (!s_.ok()) return s_;                                                               \
  } while (false)
#define PLANNER(method, request, response) \
  SEMMOE_CALL(planner_, method, request, response, "planner", o_.planner)
#define ROUTER(method, request, response) \
  SEMMOE_CALL(router_, method, request, response, "router", o_.router)

#endif  // SEMMOE_CONSOLE_RPC_UTIL_H_
