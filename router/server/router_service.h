// RouterService (router/proto/router.proto): the gRPC door, a thin adapter over RouterCore
// (router/core/router_core.h), which does everything a request goes through.
//
// Generate: the request goes to RouterCore::Submit with the client's deadline; a refusal becomes
// the call's status at once. Tokens are written as they arrive, coalesced while a write is in
// flight; the last message carries the final record. A client that cancels cancels the core's
// call (and the engine's). Each absl::Status becomes a grpc::Status once, where the call
// finishes (common/grpc_status.h). GetStats answers RouterCore::Stats.
//
// Thread-safe. Shut the gRPC server down before destroying this; `core` outlives it.
#ifndef SEMMOE_ROUTER_SERVER_ROUTER_SERVICE_H_
#define SEMMOE_ROUTER_SERVER_ROUTER_SERVICE_H_

#include "router/core/router_api.h"
#include "router/proto/router.grpc.pb.h"

namespace semmoe::router {

class RouterServiceImpl final : public rpc::RouterService::CallbackService {
 public:
  // REQUIRES: `core` outlives this.
  explicit RouterServiceImpl(RouterApi& core) : core_(core) {}

  grpc::ServerWriteReactor<rpc::GenerateResponse>* Generate(
      grpc::CallbackServerContext* context, const rpc::GenerateRequest* request) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const rpc::GetStatsRequest* request,
                                     rpc::RouterStats* response) override;

 private:
  RouterApi& core_;
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_SERVER_ROUTER_SERVICE_H_
