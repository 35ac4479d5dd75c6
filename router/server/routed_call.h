// One RouterService.Generate call from admission to its end: placed by its engine group's
// rebatcher, streamed from the engine rank through an asynchronous client call, retried on
// another rank if the rank fails before the first token, cancelled with the client.
#ifndef SEMMOE_ROUTER_SERVER_ROUTED_CALL_H_
#define SEMMOE_ROUTER_SERVER_ROUTED_CALL_H_

#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/proto/engine.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "router/proto/router.grpc.pb.h"
#include "router/rebatch/assigner.h"
#include "router/server/router_state.h"

namespace semmoe::router {

// Starts placing the request and returns the call's reactor (gRPC owns it). `state` counts the
// call in flight (admission already counted it); the call holds `state` until it ends.
grpc::ServerWriteReactor<rpc::GenerateResponse>* StartRoutedCall(
    std::shared_ptr<RouterState> state, EngineGroup& group, engine::rpc::GenerateRequest request,
    PendingRequest pending, absl::Time start, absl::Time hold_until,
    std::optional<absl::Time> deadline, int64_t version);

// A reactor that only answers `status` (as ToGrpcStatus gives it).
grpc::ServerWriteReactor<rpc::GenerateResponse>* ErrorCall(const absl::Status& status);

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_SERVER_ROUTED_CALL_H_
