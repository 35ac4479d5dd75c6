// What a door (the gRPC service, the HTTP door) sees of the router core: RouterApi takes a
// request and gives back a handle; the call's output goes to the door's CallSink. The core knows
// nothing of the door's transport; a door knows nothing of engines (RouterCore implements this;
// tests and the fuzzers fake it).
#ifndef SEMMOE_ROUTER_CORE_ROUTER_API_H_
#define SEMMOE_ROUTER_CORE_ROUTER_API_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "router/proto/router.pb.h"

namespace semmoe::router {

// Thread-compatible: the core calls one call's sink from one thread at a time (each call from
// whichever thread its engine stream or its placement runs on), in order: OnTokens any number of
// times, then OnEnd exactly once. A sink must not block (it runs on the core's threads): a door
// buffers what it cannot write yet.
class CallSink {
 public:
  virtual ~CallSink() = default;
  // Generated token ids since the last call, and their text, as the engine streamed them (the
  // engine decodes the output once: see GenerateResponse.text in engine.proto; the texts joined
  // are the final record's text).
  virtual void OnTokens(absl::Span<const int32_t> token_ids, absl::string_view text) = 0;
  // The end: OK with the final record (`final` is then set), or why the call failed — before the
  // first token with the codes of router.proto's Generate (INVALID_ARGUMENT, OUT_OF_RANGE for a
  // prompt the model cannot take, RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED),
  // after tokens UNAVAILABLE when the rank failed.
  virtual void OnEnd(const absl::Status& status, const rpc::FinalRecord* final) = 0;
};

// A call in flight, as its door holds it. Thread-safe.
class CallHandle {
 public:
  virtual ~CallHandle() = default;
  // The client went away: cancels the engine call (freeing its slot) or takes the request out of
  // the queue. OnEnd follows (CANCELLED) unless the call had already ended.
  virtual void Cancel() = 0;
};

class RouterApi {
 public:
  virtual ~RouterApi() = default;
  // Takes one request (router.proto's GenerateRequest as data) whose output goes to `sink`.
  // Refused at once, with the sink never called: INVALID_ARGUMENT naming the field, OUT_OF_RANGE
  // for a prompt longer than the model takes, RESOURCE_EXHAUSTED ("retry later") when admission
  // refuses. Otherwise the call runs and the sink hears its end; the door keeps the handle until
  // then (to cancel it).
  virtual absl::StatusOr<std::shared_ptr<CallHandle>> Submit(const rpc::GenerateRequest& request,
                                                             std::optional<absl::Time> deadline,
                                                             std::shared_ptr<CallSink> sink) = 0;
  // What GetStats answers.
  virtual rpc::RouterStats Stats() const = 0;
  // The Prometheus text for GET /metrics.
  virtual std::string MetricsText() const = 0;
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_CORE_ROUTER_API_H_
