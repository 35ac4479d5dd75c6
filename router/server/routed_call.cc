#include "router/server/routed_call.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace semmoe::router {
namespace {

using EngineRequest = engine::rpc::GenerateRequest;
using EngineResponse = engine::rpc::GenerateResponse;
using Response = rpc::GenerateResponse;
using Shared = RouterState;

class Call;

// The engine side of one attempt: a callback client stream on one rank. Kept alive by itself
// until OnDone, and by the call while the call may still cancel it.
class Upstream : public grpc::ClientReadReactor<EngineResponse> {
 public:
  Upstream(std::shared_ptr<Call> call, int rank) : call_(std::move(call)), rank_(rank) {}
  void Start(std::shared_ptr<Upstream> self, engine::rpc::EngineService::Stub& stub,
             const EngineRequest& request, std::optional<absl::Time> deadline);
  void Cancel() { context_.TryCancel(); }
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  std::shared_ptr<Call> call_;
  const int rank_;
  grpc::ClientContext context_;
  EngineRequest request_;
  EngineResponse message_;
  std::shared_ptr<Upstream> self_;
};

// One client call: admission to its end. All state under mu_; reactor operations are issued
// outside it (a reaction may run inline).
class Call : public std::enable_shared_from_this<Call> {
 public:
  Call(std::shared_ptr<Shared> shared, EngineGroup& group, EngineRequest request,
       PendingRequest pending, absl::Time start, absl::Time hold_until,
       std::optional<absl::Time> deadline, int64_t version)
      : shared_(std::move(shared)),
        group_(group),
        request_(std::move(request)),
        pending_(std::move(pending)),
        start_(start),
        hold_until_(hold_until),
        deadline_(deadline),
        version_(version) {}
  ~Call() { shared_->in_flight.fetch_sub(1); }

  void Attach(grpc::ServerWriteReactor<Response>* reactor) {
    absl::MutexLock lock(&mu_);
    reactor_ = reactor;
  }

  void Place() {
    std::shared_ptr<Call> self = shared_from_this();
    group_.rebatcher().Submit(pending_, hold_until_, [self](int rank) { self->OnPlaced(rank); });
  }

  void OnPlaced(int rank) {
    std::shared_ptr<Upstream> upstream;
    {
      absl::MutexLock lock(&mu_);
      if (rank >= 0 && placed_ == absl::InfinitePast()) placed_ = absl::Now();
      if (rank >= 0 && !cancelled_) {
        rank_ = rank;
        upstream = std::make_shared<Upstream>(shared_from_this(), rank);
        upstream_ = upstream;
      }
    }
    if (rank < 0) {
      FinishWith(grpc::Status(
          grpc::StatusCode::UNAVAILABLE,
          last_error_.empty()
              ? "no engine rank can take the request"
              : absl::StrCat("no other engine rank can take the request (", last_error_, ")")));
      return;
    }
    if (upstream == nullptr) {  // Cancelled while in the window.
      group_.rebatcher().Finished(rank, pending_.load_tokens);
      FinishWith(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled before it was sent"));
      return;
    }
    upstream->Start(upstream, group_.stub(rank), request_, deadline_);
  }

  void OnUpstreamMessage(const EngineResponse& message) {
    {
      absl::MutexLock lock(&mu_);
      if (message.token_ids_size() > 0) {
        const absl::Time now = absl::Now();
        if (!first_token_.has_value()) first_token_ = now;
        last_token_ = now;
        received_ += message.token_ids_size();
        tokens_.insert(tokens_.end(), message.token_ids().begin(), message.token_ids().end());
      }
      if (message.has_final()) engine_final_ = message.final();
    }
    Pump();
  }

  void OnUpstreamDone(int rank, const grpc::Status& status) {
    group_.rebatcher().Finished(rank, pending_.load_tokens);
    bool retry = false;
    std::optional<grpc::Status> fail;
    {
      absl::MutexLock lock(&mu_);
      upstream_ = nullptr;
      const bool retriable = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                             status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
      if (status.ok()) {
        if (!engine_final_.has_value()) {
          fail = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                              absl::StrCat("engine rank ", rank, " ended the stream early"));
        } else {
          Complete();
        }
      } else if (cancelled_) {
        fail = status;
      } else if (received_ == 0 && retriable &&
                 static_cast<int>(pending_.exclude.size()) + 1 < group_.size()) {
        pending_.exclude.push_back(rank);
        last_error_ = absl::StrCat("rank ", rank, ": ", status.error_message());
        ++retries_;
        retry = true;
      } else if (received_ > 0) {
        fail = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            absl::StrCat("engine rank ", rank, " failed after ", received_,
                                         " tokens: ", status.error_message()));
      } else {
        fail = status;
      }
    }
    if (retry) {
      if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
        group_.rebatcher().SetUsable(rank, false);  // Until the poller hears from it again.
      }
      shared_->retried.fetch_add(1);
      Place();
      return;
    }
    if (fail.has_value()) {
      FinishWith(*fail);
    } else {
      Pump();
    }
  }

  // The client went away or its deadline passed.
  void Cancel() {
    std::shared_ptr<Upstream> upstream;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      upstream = upstream_;
    }
    if (upstream != nullptr) upstream->Cancel();
  }

  void WriteDone(bool ok) {
    bool finish_now = false;
    std::optional<grpc::Status> deferred;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      finish_now = ok && final_sent_;
      deferred.swap(deferred_);
    }
    if (deferred.has_value()) {
      FinishWith(*deferred);
      return;
    }
    if (!ok) {
      Cancel();
      FinishWith(grpc::Status(grpc::StatusCode::CANCELLED, "the client stream broke"));
      return;
    }
    if (finish_now) {
      FinishWith(grpc::Status::OK);
      return;
    }
    Pump();
  }

  void Detach() {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
  }

  void FinishWith(const grpc::Status& status) {
    grpc::ServerWriteReactor<Response>* reactor;
    {
      absl::MutexLock lock(&mu_);
      if (finished_ || reactor_ == nullptr) return;
      if (writing_) {  // WriteDone finishes.
        if (!status.ok() && !deferred_.has_value()) deferred_ = status;
        return;
      }
      finished_ = true;
      reactor = reactor_;
    }
    if (!status.ok() && status.error_code() != grpc::StatusCode::CANCELLED) {
      shared_->failed.fetch_add(1);
      group_.Failed();
    }
    reactor->Finish(status);
  }

 private:
  // The router's final record from the engine's (under mu_).
  void Complete() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const absl::Time now = absl::Now();
    rpc::FinalRecord& f = final_.emplace();
    const engine::rpc::FinalRecord& e = *engine_final_;
    f.set_request_id(e.request_id());
    f.set_prompt_tokens(e.prompt_tokens());
    f.set_completion_tokens(e.completion_tokens());
    f.set_finish_reason(e.finish_reason());
    f.set_text(e.text());
    f.set_rank(rank_);
    f.set_arm(group_.name());
    const absl::Time first = first_token_.value_or(now);
    f.set_ttft_ms(absl::ToDoubleMilliseconds(first - start_));
    f.set_e2e_ms(absl::ToDoubleMilliseconds(now - start_));
    const int n = e.completion_tokens();
    f.set_tpot_ms(n > 1 ? absl::ToDoubleMilliseconds(last_token_ - first) / (n - 1) : 0.0);
    f.set_queue_ms(absl::ToDoubleMilliseconds(placed_ - start_));
    f.set_retries(retries_);
    f.set_placement_version(version_);
    f.set_rank_lar(group_.rank_lar(rank_));
    f.set_lar(e.activations() > 0 ? static_cast<double>(e.local_activations()) /
                                        static_cast<double>(e.activations())
                                  : -1.0);
    group_.Completed(f);
    shared_->completed.fetch_add(1);
    shared_->completion_tokens.fetch_add(n);
    if (n > 0) shared_->ttft.Add(f.ttft_ms());
    if (n > 1) shared_->tpot.Add(f.tpot_ms());
    shared_->e2e.Add(f.e2e_ms());
    shared_->queue.Add(f.queue_ms());
  }

  // Issues the next write if one is due.
  void Pump() {
    grpc::ServerWriteReactor<Response>* reactor = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (reactor_ == nullptr || finished_ || writing_ || final_sent_) return;
      if (tokens_.empty() && !final_.has_value()) return;
      out_.Clear();
      for (int32_t t : tokens_) out_.add_token_ids(t);
      tokens_.clear();
      if (final_.has_value()) {
        *out_.mutable_final() = *final_;
        final_sent_ = true;
      }
      writing_ = true;
      reactor = reactor_;
    }
    reactor->StartWrite(&out_);
  }

  const std::shared_ptr<Shared> shared_;
  EngineGroup& group_;
  const EngineRequest request_;
  absl::Mutex mu_;
  PendingRequest pending_;  // exclude grows under mu_ (Place reads it between attempts).
  const absl::Time start_, hold_until_;
  const std::optional<absl::Time> deadline_;
  const int64_t version_;
  grpc::ServerWriteReactor<Response>* reactor_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::shared_ptr<Upstream> upstream_ ABSL_GUARDED_BY(mu_);
  int rank_ ABSL_GUARDED_BY(mu_) = -1;
  int retries_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_error_;
  absl::Time placed_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::optional<absl::Time> first_token_ ABSL_GUARDED_BY(mu_);
  absl::Time last_token_ ABSL_GUARDED_BY(mu_);
  int64_t received_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int32_t> tokens_ ABSL_GUARDED_BY(mu_);
  std::optional<engine::rpc::FinalRecord> engine_final_ ABSL_GUARDED_BY(mu_);
  std::optional<rpc::FinalRecord> final_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool final_sent_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> deferred_ ABSL_GUARDED_BY(mu_);  // An error to end with.
  Response out_;                                               // The message in flight.
};

void Upstream::Start(std::shared_ptr<Upstream> self, engine::rpc::EngineService::Stub& stub,
                     const EngineRequest& request, std::optional<absl::Time> deadline) {
  self_ = std::move(self);
  request_ = request;
  if (deadline.has_value()) context_.set_deadline(absl::ToChronoTime(*deadline));
  stub.async()->Generate(&context_, &request_, this);
  StartRead(&message_);
  StartCall();
}

void Upstream::OnReadDone(bool ok) {
  if (!ok) return;  // OnDone follows with the status.
  call_->OnUpstreamMessage(message_);
  StartRead(&message_);
}

void Upstream::OnDone(const grpc::Status& status) {
  call_->OnUpstreamDone(rank_, status);
  call_.reset();
  self_.reset();  // May delete this.
}

class CallReactor : public grpc::ServerWriteReactor<Response> {
 public:
  explicit CallReactor(std::shared_ptr<Call> call) : call_(std::move(call)) { call_->Attach(this); }
  void OnWriteDone(bool ok) override { call_->WriteDone(ok); }
  void OnCancel() override {
    call_->Cancel();
    call_->FinishWith(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client"));
  }
  void OnDone() override {
    call_->Detach();
    delete this;
  }

 private:
  std::shared_ptr<Call> call_;
};

class ErrorReactor : public grpc::ServerWriteReactor<Response> {
 public:
  explicit ErrorReactor(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerWriteReactor<Response>* StartRoutedCall(std::shared_ptr<RouterState> state,
                                                    EngineGroup& group, EngineRequest request,
                                                    PendingRequest pending, absl::Time start,
                                                    absl::Time hold_until,
                                                    std::optional<absl::Time> deadline,
                                                    int64_t version) {
  auto call = std::make_shared<Call>(std::move(state), group, std::move(request),
                                     std::move(pending), start, hold_until, deadline, version);
  auto* reactor = new CallReactor(call);
  call->Place();
  return reactor;
}

grpc::ServerWriteReactor<Response>* ErrorCall(const grpc::Status& status) {
  return new ErrorReactor(status);
}

}  // namespace semmoe::router
