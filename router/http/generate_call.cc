#include "router/http/generate_call.h"

namespace semmoe::router::http {

GenerateCall::GenerateCall(rpc::RouterService::Stub& stub, const rpc::GenerateRequest& request,
                           absl::Time deadline)
    : request_(request) {
  context_.set_deadline(absl::ToChronoTime(deadline));
  stub.async()->Generate(&context_, &request_, this);
  StartRead(&incoming_);
  StartCall();
}

GenerateCall::~GenerateCall() {
  context_.TryCancel();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&done_));  // gRPC calls OnDone exactly once after TryCancel.
}

void GenerateCall::OnReadDone(bool ok) {
  if (!ok) return;  // OnDone follows.
  {
    absl::MutexLock lock(&mu_);
    queue_.push_back(std::move(incoming_));
  }
  incoming_.Clear();
  StartRead(&incoming_);
}

void GenerateCall::OnDone(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  status_ = status;
  done_ = true;
}

GenerateCall::Event GenerateCall::Next(absl::Duration timeout, rpc::GenerateResponse* message,
                                       grpc::Status* status) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || done_; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&ready), timeout)) return Event::kTimeout;
  if (!queue_.empty()) {
    *message = std::move(queue_.front());
    queue_.pop_front();
    return Event::kMessage;
  }
  *status = status_;
  return Event::kDone;
}

}  // namespace semmoe::router::http
