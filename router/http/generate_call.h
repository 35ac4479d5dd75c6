// One RouterService.Generate call seen as a queue of events the HTTP frontend pulls from at its
// own pace: streamed messages in order, then the call's end. The frontend waits in short slices
// so it can check, between them, whether its client is still connected, and cancel the call
// (which cancels the request in the engine) when it is not.
//
// Thread-safe. The destructor cancels the call if it is still running and waits for its end.
#ifndef SEMMOE_ROUTER_HTTP_GENERATE_CALL_H_
#define SEMMOE_ROUTER_HTTP_GENERATE_CALL_H_

#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "router/proto/router.grpc.pb.h"

namespace semmoe::router::http {

class GenerateCall final : public grpc::ClientReadReactor<rpc::GenerateResponse> {
 public:
  // Starts the call with `deadline`. REQUIRES: `stub` outlives this.
  GenerateCall(rpc::RouterService::Stub& stub, const rpc::GenerateRequest& request,
               absl::Time deadline);
  ~GenerateCall() override;

  enum class Event { kMessage, kDone, kTimeout };
  // The next message (kMessage, into *message), else the end (kDone, its status into *status,
  // returned again on every later call), else kTimeout after `timeout`.
  Event Next(absl::Duration timeout, rpc::GenerateResponse* message, grpc::Status* status);
  void Cancel() { context_.TryCancel(); }

  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  grpc::ClientContext context_;
  rpc::GenerateRequest request_;
  rpc::GenerateResponse incoming_;
  absl::Mutex mu_;
  std::deque<rpc::GenerateResponse> queue_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace semmoe::router::http

#endif  // SEMMOE_ROUTER_HTTP_GENERATE_CALL_H_
