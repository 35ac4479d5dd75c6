#include "router/core/routed_call.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "grpcpp/alarm.h"
#include "router/core/call_policy.h"

namespace semmoe::router {
namespace {

using EngineRequest = engine::rpc::GenerateRequest;
using EngineResponse = engine::rpc::GenerateResponse;
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

// One client call: admission to its end. All state under mu_; the sink is called outside it,
// from one thread at a time (the engine stream's reads are sequential, and placement, the
// requeue alarm and the stream never run for one call at once).
class Call : public CallHandle, public std::enable_shared_from_this<Call> {
 public:
  explicit Call(RoutedCallParams p)
      : shared_(std::move(p.state)),
        group_(*p.group),
        request_(std::move(p.request)),
        pending_(std::move(p.pending)),
        start_(p.start),
        hold_until_(p.hold_until),
        deadline_(p.deadline),
        version_(p.version),
        sink_(std::move(p.sink)) {}
  ~Call() override {
    // The door dropped its handle before the end (it should keep it): the sink still hears one.
    bool finished, started;
    {
      absl::MutexLock lock(&mu_);
      finished = finished_;
      started = first_token_.has_value();
    }
    if (!finished) {
      if (!started) group_.Unstarted(request_.token_ids_size());
      sink_->OnEnd(absl::CancelledError("the call was dropped"), nullptr);
    }
    shared_->in_flight.fetch_sub(1);
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
      group_.rebatcher().Finished(rank, pending_.load_tokens, pending_.prompt_tokens);
      FinishWith(absl::CancelledError("cancelled before it was sent"));
      return;
    }
    upstream->Start(upstream, group_.stub(rank), request_, deadline_);
  }

  void OnUpstreamMessage(const EngineResponse& message) {
    bool first = false;
    int rank = -1;
    {
      absl::MutexLock lock(&mu_);
      if (message.token_ids_size() > 0) {
        const absl::Time now = absl::Now();
        if (!first_token_.has_value()) {
          first_token_ = now;
          first = true;
          rank = rank_;
        }
        last_token_ = now;
        received_ += message.token_ids_size();
      }
      if (message.has_final()) engine_final_ = message.final();
    }
    // Its prompt is no longer ahead of anyone (admission's cost model, engine_group.h).
    if (first) {
      group_.FirstToken(request_.token_ids_size());
      group_.rebatcher().Prefilled(rank, pending_.prompt_tokens);
    }
    {
      absl::MutexLock lock(&mu_);
      if (finished_ || (message.token_ids_size() == 0 && message.text().empty())) return;
    }
    sink_->OnTokens(message.token_ids(), message.text());
  }

  // `status`: the engine call's end (converted from gRPC's once, in Upstream::OnDone).
  void OnUpstreamDone(int rank, const absl::Status& status) {
    using Kind = AttemptDecision::Kind;
    bool started;
    {
      absl::MutexLock lock(&mu_);
      started = first_token_.has_value();
    }
    group_.rebatcher().Finished(rank, pending_.load_tokens, started ? 0 : pending_.prompt_tokens);
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
        Complete();
        return;
    }
  }

  // The client went away. The end comes from the engine call's end (CANCELLED), or from the
  // placement when the call is still in the window or waiting to be placed again.
  void Cancel() override {
    std::shared_ptr<Upstream> upstream;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      upstream = upstream_;
    }
    if (upstream != nullptr) upstream->Cancel();
  }

  // The call's one exit (`final` with OK).
  void FinishWith(const absl::Status& status, const rpc::FinalRecord* final = nullptr) {
    bool started;
    {
      absl::MutexLock lock(&mu_);
      if (finished_) return;
      finished_ = true;
      started = first_token_.has_value();
    }
    if (!started) group_.Unstarted(request_.token_ids_size());
    if (!status.ok() && !absl::IsCancelled(status)) {
      shared_->failed.fetch_add(1);
      group_.Failed();
    }
    sink_->OnEnd(status, final);
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
    // The door's handle keeps the call alive until it ends; a cancelled alarm finds it gone.
    alarm->Set(absl::ToChronoTime(now + kStep),
               [weak = std::weak_ptr<Call>(shared_from_this())](bool ok) {
                 if (auto self = weak.lock(); self != nullptr) self->Place();
               });
    return true;
  }

  // The router's final record from the engine's, counted, then the end.
  void Complete() {
    rpc::FinalRecord f;
    {
      absl::MutexLock lock(&mu_);
      f = MakeFinalRecord(*engine_final_,
                          {.start = start_,
                           .placed = placed_,
                           .first_token = first_token_,
                           .last_token = last_token_,
                           .now = absl::Now()},
                          rank_, group_.name(), retries_, version_, group_.rank_lar(rank_));
    }
    const int n = f.completion_tokens();
    group_.Completed(f);
    shared_->completed.fetch_add(1);
    shared_->completion_tokens.fetch_add(n);
    if (n > 0) shared_->ttft.Add(f.ttft_ms());
    if (n > 1) shared_->tpot.Add(f.tpot_ms());
    shared_->e2e.Add(f.e2e_ms());
    shared_->queue.Add(f.queue_ms());
    FinishWith(absl::OkStatus(), &f);
  }

  const std::shared_ptr<Shared> shared_;
  EngineGroup& group_;
  const EngineRequest request_;
  absl::Mutex mu_;
  PendingRequest pending_;  // exclude grows under mu_ (Place reads it between attempts).
  const absl::Time start_, hold_until_;
  const std::optional<absl::Time> deadline_;
  const int64_t version_;
  const std::shared_ptr<CallSink> sink_;
  std::shared_ptr<Upstream> upstream_ ABSL_GUARDED_BY(mu_);
  int rank_ ABSL_GUARDED_BY(mu_) = -1;
  int retries_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_error_;
  absl::Time placed_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::optional<absl::Time> first_token_ ABSL_GUARDED_BY(mu_);
  absl::Time last_token_ ABSL_GUARDED_BY(mu_);
  int64_t received_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<engine::rpc::FinalRecord> engine_final_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::unique_ptr<grpc::Alarm>> alarms_ ABSL_GUARDED_BY(mu_);
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

}  // namespace

std::shared_ptr<CallHandle> StartRoutedCall(RoutedCallParams params) {
  auto call = std::make_shared<Call>(std::move(params));
  call->Place();
  return call;
}

}  // namespace semmoe::router
