#include "router/server/router_service.h"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"

namespace semmoe::router {
namespace {

using Response = rpc::GenerateResponse;

// The core's sink for one gRPC call: keeps what the reactor has not written yet and issues the
// next write when the last one is done. Lives as long as either the core's call or the reactor
// holds it; the reactor detaches it when gRPC is done with the call.
class StreamBridge : public CallSink {
 public:
  void Attach(grpc::ServerWriteReactor<Response>* reactor) {
    absl::MutexLock lock(&mu_);
    reactor_ = reactor;
  }
  void Detach() {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
  }

  void OnTokens(absl::Span<const int32_t> ids, absl::string_view text) override {
    {
      absl::MutexLock lock(&mu_);
      tokens_.insert(tokens_.end(), ids.begin(), ids.end());
      text_.append(text.data(), text.size());
    }
    Pump();
  }

  void OnEnd(const absl::Status& status, const rpc::FinalRecord* final) override {
    {
      absl::MutexLock lock(&mu_);
      if (status.ok() && final != nullptr) {
        final_ = *final;
      } else {
        end_ =
            status.ok() ? absl::InternalError("the call ended without its final record") : status;
      }
    }
    Pump();
  }

  // gRPC finished a write (`ok`: it reached the client's stream).
  void WriteDone(bool ok) {
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok && !end_.has_value()) end_ = absl::CancelledError("the client stream broke");
    }
    Pump();
  }

  // The client cancelled: finish now; the core's end, when it comes, finds the call finished.
  void Cancelled() {
    grpc::ServerWriteReactor<Response>* reactor;
    {
      absl::MutexLock lock(&mu_);
      if (finished_ || reactor_ == nullptr) return;
      finished_ = true;
      reactor = reactor_;
    }
    reactor->Finish(ToGrpcStatus(absl::CancelledError("cancelled by the client")));
  }

 private:
  // Issues the next write, or the finish, if one is due and no write is in flight.
  void Pump() {
    grpc::ServerWriteReactor<Response>* reactor = nullptr;
    std::optional<absl::Status> finish;
    {
      absl::MutexLock lock(&mu_);
      if (reactor_ == nullptr || finished_ || writing_) return;
      if (end_.has_value() || (final_sent_ && tokens_.empty() && text_.empty())) {
        finished_ = true;
        finish = end_.value_or(absl::OkStatus());
      } else if (!tokens_.empty() || !text_.empty() || (final_.has_value() && !final_sent_)) {
        out_.Clear();
        out_.mutable_token_ids()->Add(tokens_.begin(), tokens_.end());
        tokens_.clear();
        out_.set_text(std::move(text_));
        text_.clear();
        if (final_.has_value()) {
          *out_.mutable_final() = *final_;
          final_sent_ = true;
        }
        writing_ = true;
      } else {
        return;
      }
      reactor = reactor_;
    }
    if (finish.has_value()) {
      reactor->Finish(ToGrpcStatus(*finish));
    } else {
      reactor->StartWrite(&out_);
    }
  }

  absl::Mutex mu_;
  grpc::ServerWriteReactor<Response>* reactor_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::vector<int32_t> tokens_ ABSL_GUARDED_BY(mu_);
  std::string text_ ABSL_GUARDED_BY(mu_);  // The tokens' text.
  std::optional<rpc::FinalRecord> final_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> end_ ABSL_GUARDED_BY(mu_);  // An error to end with.
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool final_sent_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  Response out_;  // The message in flight.
};

class GenerateReactor : public grpc::ServerWriteReactor<Response> {
 public:
  explicit GenerateReactor(std::shared_ptr<StreamBridge> bridge) : bridge_(std::move(bridge)) {
    bridge_->Attach(this);
  }
  void SetHandle(std::shared_ptr<CallHandle> handle) {
    bool cancelled;
    {
      absl::MutexLock lock(&mu_);
      handle_ = handle;
      cancelled = cancelled_;
    }
    if (cancelled) handle->Cancel();  // The client left while the core took the call.
  }
  void OnWriteDone(bool ok) override { bridge_->WriteDone(ok); }
  void OnCancel() override {
    std::shared_ptr<CallHandle> handle;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      handle = handle_;
    }
    if (handle != nullptr) handle->Cancel();
    bridge_->Cancelled();
  }
  void OnDone() override {
    bridge_->Detach();
    delete this;
  }

 private:
  std::shared_ptr<StreamBridge> bridge_;
  absl::Mutex mu_;
  std::shared_ptr<CallHandle> handle_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

grpc::ServerWriteReactor<Response>* RouterServiceImpl::Generate(
    grpc::CallbackServerContext* context, const rpc::GenerateRequest* request) {
  std::optional<absl::Time> deadline;
  if (context->deadline() != std::chrono::system_clock::time_point::max()) {
    deadline = absl::FromChrono(context->deadline());
  }
  auto bridge = std::make_shared<StreamBridge>();
  // The reactor exists before the call can end (the core may end it on another thread at once).
  auto* reactor = new GenerateReactor(bridge);
  absl::StatusOr<std::shared_ptr<CallHandle>> handle = core_.Submit(*request, deadline, bridge);
  if (!handle.ok()) {
    bridge->OnEnd(handle.status(), nullptr);
    return reactor;
  }
  reactor->SetHandle(*std::move(handle));
  return reactor;
}

grpc::ServerUnaryReactor* RouterServiceImpl::GetStats(grpc::CallbackServerContext* context,
                                                      const rpc::GetStatsRequest* request,
                                                      rpc::RouterStats* response) {
  *response = core_.Stats();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace semmoe::router
