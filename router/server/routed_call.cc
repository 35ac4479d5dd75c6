#include "router/server/routed_call.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "grpcpp/alarm.h"
#include "router/server/call_policy.h"

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
      if (Requeue()) return;
      FinishWith(NoRankStatus(last_error_));
      return;
    }
    if (upstream == nullptr) {  // Cancelled while in the window.
      group_.rebatcher().Finished(rank, pending_.load_tokens);
      FinishWith(absl::CancelledError("cancelled before it was sent"));
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

  // `status`: the engine call's end (converted from gRPC's once, in Upstream::OnDone).
  void OnUpstreamDone(int rank, const absl::Status& status) {
    using Kind = AttemptDecision::Kind;
    group_.rebatcher().Finished(rank, pending_.load_tokens);
    AttemptDecision decision;
    {
      absl::MutexLock lock(&mu_);
      upstream_ = nullptr;
      decision = DecideAttempt({.rank = rank,
                                .status = status,
                                .final_received = engine_final_.has_value(),
                                .tokens_received = received_,
                                .cancelled = cancelled_,
                                .excluded = static_cast<int>(pending_.exclude.size()),
                                .group_size = group_.size()});
      if (decision.kind == Kind::kComplete) Complete();
      if (decision.kind == Kind::kRetry) {
        pending_.exclude.push_back(rank);
        last_error_ = decision.note;
        ++retries_;
      }
    }
    switch (decision.kind) {
      case Kind::kRetry:
        if (decision.mark_unusable) {
          group_.rebatcher().SetUsable(rank, false);  // Until the poller hears from it again.
        }
        shared_->retried.fetch_add(1);
        Place();
        return;
      case Kind::kFail:
        FinishWith(decision.status);
        return;
      case Kind::kComplete:
        Pump();
        return;
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
    std::optional<absl::Status> deferred;
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
      FinishWith(absl::CancelledError("the client stream broke"));
      return;
    }
    if (finish_now) {
      FinishWith(absl::OkStatus());
      return;
    }
    Pump();
  }

  void Detach() {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
  }

  // The call's one exit: its absl::Status becomes the client's grpc::Status here.
  void FinishWith(const absl::Status& status) {
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
    if (!status.ok() && !absl::IsCancelled(status)) {
      shared_->failed.fetch_add(1);
      group_.Failed();
    }
    reactor->Finish(ToGrpcStatus(status));
  }

 private:
  // No rank can take the request now: places it again shortly (every rank may be tried again)
  // while the requeue window and its deadline allow. False: it is over.
  bool Requeue() {
    constexpr absl::Duration kStep = absl::Milliseconds(200);
    const absl::Time now = absl::Now();
    absl::Time until = start_ + shared_->options.requeue;
    if (deadline_.has_value()) until = std::min(until, *deadline_);
    grpc::Alarm* alarm;
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_ || now + kStep >= until) return false;
      pending_.exclude.clear();
      // Kept until the call ends (a handful per second of outage): never destroyed while set.
      alarm = alarms_.emplace_back(std::make_unique<grpc::Alarm>()).get();
    }
    shared_->requeued.fetch_add(1);
    // The reactor keeps the call alive until it finishes; a cancelled alarm finds it gone.
    alarm->Set(absl::ToChronoTime(now + kStep),
               [weak = std::weak_ptr<Call>(shared_from_this())](bool ok) {
                 if (auto self = weak.lock(); self != nullptr) self->Place();
               });
    return true;
  }

  // The router's final record from the engine's (under mu_).
  void Complete() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    final_ = MakeFinalRecord(*engine_final_,
                             {.start = start_,
                              .placed = placed_,
                              .first_token = first_token_,
                              .last_token = last_token_,
                              .now = absl::Now()},
                             rank_, group_.name(), retries_, version_, group_.rank_lar(rank_));
    const rpc::FinalRecord& f = *final_;
    const int n = f.completion_tokens();
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
  std::optional<absl::Status> deferred_ ABSL_GUARDED_BY(mu_);  // An error to end with.
  std::vector<std::unique_ptr<grpc::Alarm>> alarms_ ABSL_GUARDED_BY(mu_);
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
  call_->OnUpstreamDone(rank_, FromGrpcStatus(status));
  call_.reset();
  self_.reset();  // May delete this.
}

class CallReactor : public grpc::ServerWriteReactor<Response> {
 public:
  explicit CallReactor(std::shared_ptr<Call> call) : call_(std::move(call)) { call_->Attach(this); }
  void OnWriteDone(bool ok) override { call_->WriteDone(ok); }
  void OnCancel() override {
    call_->Cancel();
    call_->FinishWith(absl::CancelledError("cancelled by the client"));
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
  explicit ErrorReactor(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
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

grpc::ServerWriteReactor<Response>* ErrorCall(const absl::Status& status) {
  return new ErrorReactor(status);
}

}  // namespace semmoe::router
