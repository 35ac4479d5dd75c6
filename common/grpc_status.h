// The one place where absl::Status and grpc::Status meet: service adapters call these at the
// RPC boundary, core code never sees grpc::Status.
#ifndef SEMMOE_COMMON_GRPC_STATUS_H_
#define SEMMOE_COMMON_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace semmoe {

// Same canonical code, same message. Payloads are not carried.
grpc::Status ToGrpcStatus(const absl::Status& status);

// Same canonical code, same message; a code outside the canonical range becomes UNKNOWN.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace semmoe

#endif  // SEMMOE_COMMON_GRPC_STATUS_H_
