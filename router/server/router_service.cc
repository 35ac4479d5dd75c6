#include "router/server/router_service.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "glog/logging.h"
#include "grpcpp/grpcpp.h"
#include "planner/proto/planner.grpc.pb.h"

namespace semmoe::router {

using EngineRequest = engine::rpc::GenerateRequest;
using EngineResponse = engine::rpc::GenerateResponse;
using Response = rpc::GenerateResponse;

struct RouterServiceImpl::Shared {
  explicit Shared(const RouterOptions& o) : options(o) {
    for (const GroupOptions& g : o.groups) {
      groups.push_back(std::make_unique<EngineGroup>(g));
      shares.push_back(g.share_percent);
    }
  }

  const RouterOptions options;
  std::vector<std::unique_ptr<EngineGroup>> groups;
  std::vector<int> shares;
  std::atomic<int64_t> in_flight{0}, received{0}, completed{0}, failed{0}, rejected{0}, retried{0},
      completion_tokens{0}, next_id{0}, polls{0};
  LatencyWindow ttft, tpot, e2e, queue;
  absl::Mutex mu;
  bool stop ABSL_GUARDED_BY(mu) = false;
};

namespace {

using Shared = RouterServiceImpl::Shared;

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

grpc::Status Invalid(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

}  // namespace

RouterServiceImpl::RouterServiceImpl(const RouterOptions& options)
    : shared_(std::make_shared<Shared>(options)) {
  poller_ = std::thread([this] { Poll(); });
  if (options.experiment_id > 0 && !options.planner.empty()) {
    reporter_ = std::thread([this] { Report(); });
  }
}

RouterServiceImpl::~RouterServiceImpl() {
  {
    absl::MutexLock lock(&shared_->mu);
    shared_->stop = true;
  }
  poller_.join();
  if (reporter_.joinable()) reporter_.join();
  // Calls still finishing (the server is shut down first) hold the shared state; it owns the
  // rebatchers' threads, so it must be destroyed here, never by a call released on one of them.
  const absl::Time until = absl::Now() + absl::Seconds(30);
  while (shared_.use_count() > 1 && absl::Now() < until) absl::SleepFor(absl::Milliseconds(1));
  if (shared_.use_count() > 1) {
    LOG(ERROR) << "router: calls outlived the service by 30 s; leaving their state behind";
    new std::shared_ptr<Shared>(std::move(shared_));  // Deliberately leaked.
  }
}

void RouterServiceImpl::Poll() {
  for (;;) {
    for (auto& g : shared_->groups) g->Poll();
    shared_->polls.fetch_add(1);
    absl::MutexLock lock(&shared_->mu);
    if (shared_->mu.AwaitWithTimeout(absl::Condition(&shared_->stop),
                                     shared_->options.poll_interval)) {
      return;
    }
  }
}

void RouterServiceImpl::Report() {
  auto stub = planner::rpc::PlannerService::NewStub(
      grpc::CreateChannel(shared_->options.planner, grpc::InsecureChannelCredentials()));
  for (bool last = false; !last;) {
    {
      absl::MutexLock lock(&shared_->mu);
      last = shared_->mu.AwaitWithTimeout(absl::Condition(&shared_->stop),
                                          shared_->options.report_interval);
    }
    for (auto& g : shared_->groups) {  // Once more on the way out: the final numbers.
      planner::rpc::RecordArmMetricsRequest request;
      request.set_id(shared_->options.experiment_id);
      request.set_arm(g->name());
      request.set_metrics_json(g->MetricsJson().dump());
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
      planner::rpc::RecordArmMetricsResponse response;
      const grpc::Status status = stub->RecordArmMetrics(&context, request, &response);
      if (!status.ok()) {
        LOG_EVERY_N(WARNING, 10) << "router: cannot record arm " << g->name()
                                 << "'s metrics in the planner: " << status.error_message();
      }
    }
  }
}

grpc::ServerWriteReactor<Response>* RouterServiceImpl::Generate(
    grpc::CallbackServerContext* context, const rpc::GenerateRequest* request) {
  const absl::Time start = absl::Now();
  shared_->received.fetch_add(1);
  const RouterOptions& o = shared_->options;
  EngineRequest up;
  up.set_request_id(request->request_id().empty()
                        ? absl::StrCat("router-", shared_->next_id.fetch_add(1))
                        : request->request_id());
  if (!request->text().empty() && request->token_ids_size() > 0) {
    return new ErrorReactor(Invalid("give either text or token_ids, not both"));
  }
  std::vector<int32_t> prompt;
  if (!request->text().empty()) {
    if (o.tokenizer == nullptr) {
      return new ErrorReactor(Invalid("text prompts need a tokenizer; this router has none"));
    }
    absl::StatusOr<std::vector<int32_t>> ids = o.tokenizer->Encode(request->text());
    if (!ids.ok()) return new ErrorReactor(Invalid(absl::StrCat("text: ", ids.status().message())));
    prompt = std::move(*ids);
  } else {
    for (int32_t id : request->token_ids()) {
      if (id < 0 || id >= o.vocab_size) {
        return new ErrorReactor(Invalid(
            absl::StrCat("token_ids: ", id, " is outside the vocabulary [0, ", o.vocab_size, ")")));
      }
    }
    prompt.assign(request->token_ids().begin(), request->token_ids().end());
  }
  if (prompt.empty()) return new ErrorReactor(Invalid("the prompt is empty"));
  if (request->max_tokens() < 0) return new ErrorReactor(Invalid("max_tokens must be ≥ 0"));
  if (!(request->max_queue_ms() >= 0)) {
    return new ErrorReactor(Invalid("max_queue_ms must be ≥ 0"));
  }
  if (shared_->in_flight.fetch_add(1) >= o.max_in_flight) {
    shared_->in_flight.fetch_sub(1);
    shared_->rejected.fetch_add(1);
    return new ErrorReactor(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("the router has ", o.max_in_flight, " requests in flight; retry later")));
  }
  for (int32_t id : prompt) up.add_token_ids(id);
  up.set_max_tokens(request->max_tokens());
  engine::rpc::SamplingParams* s = up.mutable_sampling();
  s->set_temperature(request->sampling().temperature());
  s->set_top_k(request->sampling().top_k());
  s->set_top_p(request->sampling().top_p());
  s->set_seed(request->sampling().seed());
  for (const std::string& stop : request->stop()) up.add_stop(stop);
  up.set_ignore_eos(request->ignore_eos());

  // The engine group (A/B arm): by the user key, else the request id.
  EngineGroup& group = *shared_->groups[ChooseGroup(
      request->user_key().empty() ? up.request_id() : request->user_key(), shared_->shares)];
  group.Received();
  PendingRequest pending;
  pending.load_tokens = static_cast<int64_t>(prompt.size()) + request->max_tokens();
  int64_t version = 0;
  if (std::shared_ptr<const RouterTables> tables = group.tables(); tables != nullptr) {
    pending.fit = tables->Fit(prompt);
    version = tables->version;
  }
  const absl::Duration max_queue = request->max_queue_ms() > 0
                                       ? absl::Milliseconds(request->max_queue_ms())
                                       : o.default_max_queue;
  std::optional<absl::Time> deadline;
  if (context->deadline() != std::chrono::system_clock::time_point::max()) {
    deadline = absl::FromChrono(context->deadline());
  }
  auto call = std::make_shared<Call>(shared_, group, std::move(up), std::move(pending), start,
                                     start + max_queue, deadline, version);
  auto* reactor = new CallReactor(call);
  call->Place();
  return reactor;
}

rpc::RouterStats RouterServiceImpl::Stats() const {
  rpc::RouterStats out;
  const RouterOptions& o = shared_->options;
  out.set_policy(o.groups.empty() ? "" : PolicyName(o.groups[0].rebatch.policy));
  out.set_experiment_id(o.experiment_id);
  out.set_received(shared_->received.load());
  out.set_completed(shared_->completed.load());
  out.set_failed(shared_->failed.load());
  out.set_rejected(shared_->rejected.load());
  out.set_retried(shared_->retried.load());
  out.set_completion_tokens(shared_->completion_tokens.load());
  out.set_polls(shared_->polls.load());
  int64_t queued = 0, local = 0, remote = 0, bytes = 0, tokens = 0;
  for (const auto& g : shared_->groups) {
    rpc::ArmStats* arm = out.add_arms();
    g->Fill(*arm);
    queued += g->rebatcher().Queued();
    if (shared_->groups.size() == 1) out.set_placement_version(arm->placement_version());
    for (const rpc::RankStats& r : arm->ranks()) {
      *out.add_ranks() = r;
      local += r.local_activations();
      remote += r.remote_activations();
      bytes += r.a2a_bytes();
      tokens += r.tokens();
    }
  }
  out.set_queued(queued);
  out.set_lar(local + remote == 0 ? 0.0 : static_cast<double>(local) / (local + remote));
  out.set_a2a_bytes_per_token(tokens == 0 ? 0.0 : static_cast<double>(bytes) / tokens);
  FillPercentiles(shared_->ttft, out.mutable_ttft_ms());
  FillPercentiles(shared_->tpot, out.mutable_tpot_ms());
  FillPercentiles(shared_->e2e, out.mutable_e2e_ms());
  FillPercentiles(shared_->queue, out.mutable_queue_ms());
  return out;
}

grpc::ServerUnaryReactor* RouterServiceImpl::GetStats(grpc::CallbackServerContext* context,
                                                      const rpc::GetStatsRequest* request,
                                                      rpc::RouterStats* response) {
  *response = Stats();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace semmoe::router
