// One generation call from admission to its end: placed by its engine group's rebatcher,
// streamed from the engine rank through an asynchronous client call, retried on another rank if
// the rank fails before the first token (call_policy.h decides), cancelled through its handle.
// Its output and end go to the call's sink (router_api.h); no door's types appear here.
#ifndef SEMMOE_ROUTER_CORE_ROUTED_CALL_H_
#define SEMMOE_ROUTER_CORE_ROUTED_CALL_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/time/time.h"
#include "engine/proto/engine.pb.h"
#include "router/core/engine_group.h"
#include "router/core/router_api.h"
#include "router/core/router_state.h"
#include "router/rebatch/assigner.h"

namespace semmoe::router {

struct RoutedCallParams {
  std::shared_ptr<RouterState> state;  // Admission already counted the call in flight.
  EngineGroup* group = nullptr;        // Borrowed from `state`.
  engine::rpc::GenerateRequest request;
  PendingRequest pending;
  absl::Time start;       // Arrival.
  absl::Time hold_until;  // The longest it may wait in the rebatching window.
  std::optional<absl::Time> deadline;
  int64_t version = 0;  // The tables it was scored with (0: none).
  std::shared_ptr<CallSink> sink;
};

// Starts placing the request. The call holds `state` until it ends; its handle cancels it.
std::shared_ptr<CallHandle> StartRoutedCall(RoutedCallParams params);

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_CORE_ROUTED_CALL_H_
