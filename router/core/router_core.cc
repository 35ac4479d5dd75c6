#include "router/core/router_core.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/security.h"
#include "engine/text/prompt.h"
#include "glog/logging.h"
#include "grpcpp/grpcpp.h"
#include "planner/proto/planner.grpc.pb.h"
#include "router/core/call_policy.h"
#include "router/core/routed_call.h"
#include "router/core/router_metrics.h"
#include "router/core/router_state.h"

namespace semmoe::router {
namespace {

constexpr absl::Duration kRolloutPoll = absl::Milliseconds(20);

}  // namespace

using EngineRequest = engine::rpc::GenerateRequest;

RouterCore::RouterCore(const RouterOptions& options)
    : shared_(std::make_shared<RouterState>(options)) {
  poller_ = std::thread([this] { Poll(); });
  if (options.experiment_id > 0 && !options.planner.empty()) {
    reporter_ = std::thread([this] { Report(); });
  }
}

RouterCore::~RouterCore() {
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
    new std::shared_ptr<RouterState>(std::move(shared_));  // Deliberately leaked.
  }
}

void RouterCore::Poll() {
  for (;;) {
    bool rolling_out = false;
    for (auto& g : shared_->groups) {
      g->Poll();
      rolling_out |= g->rolling_out();
    }
    shared_->polls.fetch_add(1);
    // While a group rolls out a placement, poll often: its tables follow the switch sooner.
    const absl::Duration wait = rolling_out ? std::min(shared_->options.poll_interval, kRolloutPoll)
                                            : shared_->options.poll_interval;
    absl::MutexLock lock(&shared_->mu);
    if (shared_->mu.AwaitWithTimeout(absl::Condition(&shared_->stop), wait)) return;
  }
}

void RouterCore::Report() {
  auto stub = planner::rpc::PlannerService::NewStub(semmoe::NewChannel(shared_->options.planner));
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

absl::StatusOr<std::shared_ptr<CallHandle>> RouterCore::Submit(const rpc::GenerateRequest& request,
                                                               std::optional<absl::Time> deadline,
                                                               std::shared_ptr<CallSink> sink) {
  const absl::Time start = absl::Now();
  shared_->received.fetch_add(1);
  const RouterOptions& o = shared_->options;
  EngineRequest up;
  up.set_request_id(request.request_id().empty()
                        ? absl::StrCat("router-", shared_->next_id.fetch_add(1))
                        : request.request_id());
  std::vector<std::pair<size_t, size_t>> literal;
  for (const rpc::TextSpan& s : request.literal_spans()) literal.emplace_back(s.begin(), s.end());
  absl::StatusOr<std::vector<int32_t>> checked =
      engine::model::CheckPrompt(request.text(), request.token_ids(), request.max_tokens(),
                                 {.tokenizer = o.tokenizer,
                                  .vocab_size = o.vocab_size,
                                  .max_prompt_tokens = o.max_prompt_tokens},
                                 std::move(literal));
  if (!checked.ok()) {
    shared_->invalid.fetch_add(1);
    return checked.status();
  }
  std::vector<int32_t> prompt = *std::move(checked);
  if (!(request.max_queue_ms() >= 0)) {
    shared_->invalid.fetch_add(1);
    return absl::InvalidArgumentError("max_queue_ms must be ≥ 0");
  }
  if (absl::Status admitted = Admit(shared_->in_flight.fetch_add(1) + 1, o.max_in_flight);
      !admitted.ok()) {
    shared_->in_flight.fetch_sub(1);
    shared_->rejected.fetch_add(1);
    return admitted;
  }
  // The engine gets the ids the prompt was checked as, and the request's own sampling message.
  up.mutable_token_ids()->Add(prompt.begin(), prompt.end());
  up.set_max_tokens(request.max_tokens());
  *up.mutable_sampling() = request.sampling();
  *up.mutable_stop() = request.stop();
  up.set_ignore_eos(request.ignore_eos());

  // The engine group (A/B arm): by the user key, else the request id.
  EngineGroup& group = *shared_->groups[ChooseGroup(
      request.user_key().empty() ? up.request_id() : request.user_key(), shared_->shares)];
  // Refused now, not after a minute in a queue, when it cannot start in time.
  const int64_t prompt_tokens = static_cast<int64_t>(prompt.size());
  const EngineGroup::WaitPrediction wait = group.PredictWait(prompt_tokens);
  if (absl::Status admitted = AdmitByWait(
          wait.wait, wait.queued_tokens, wait.tokens_per_s,
          deadline.has_value() ? std::optional<absl::Duration>(*deadline - start) : std::nullopt,
          o.max_predicted_wait);
      !admitted.ok()) {
    shared_->in_flight.fetch_sub(1);
    shared_->rejected.fetch_add(1);
    shared_->rejected_wait.fetch_add(1);
    return admitted;
  }
  group.Received(prompt_tokens);
  PendingRequest pending;
  pending.load_tokens = static_cast<int64_t>(prompt.size()) + request.max_tokens();
  pending.prompt_tokens = static_cast<int64_t>(prompt.size());
  int64_t version = 0;
  if (std::shared_ptr<const RouterTables> tables = group.tables(); tables != nullptr) {
    if (group.rebatcher().policy() == Policy::kTime) {
      pending.share = tables->Share(prompt);
    } else {
      pending.fit = tables->Fit(prompt);
      if (!group.node_of().empty()) pending.node_fit = tables->NodeFit(prompt, group.node_of());
    }
    version = tables->version;
  }
  const absl::Duration max_queue =
      request.max_queue_ms() > 0 ? absl::Milliseconds(request.max_queue_ms()) : o.default_max_queue;
  return StartRoutedCall({.state = shared_,
                          .group = &group,
                          .request = std::move(up),
                          .pending = std::move(pending),
                          .start = start,
                          .hold_until = start + max_queue,
                          .deadline = deadline,
                          .version = version,
                          .sink = std::move(sink)});
}

std::string RouterCore::MetricsText() const {
  std::vector<EngineGroup::Telemetry> telemetry;
  for (const auto& g : shared_->groups) telemetry.push_back(g->telemetry());
  return RouterMetricsText(Stats(), telemetry);
}

rpc::RouterStats RouterCore::Stats() const {
  rpc::RouterStats out;
  const RouterOptions& o = shared_->options;
  out.set_policy(o.groups.empty() ? "" : PolicyName(o.groups[0].rebatch.policy));
  out.set_experiment_id(o.experiment_id);
  out.set_received(shared_->received.load());
  out.set_completed(shared_->completed.load());
  out.set_failed(shared_->failed.load());
  out.set_rejected(shared_->rejected.load());
  out.set_invalid(shared_->invalid.load());
  out.set_retried(shared_->retried.load());
  out.set_requeued(shared_->requeued.load());
  out.set_rejected_wait(shared_->rejected_wait.load());
  out.set_completion_tokens(shared_->completion_tokens.load());
  out.set_polls(shared_->polls.load());
  int64_t queued = 0, local = 0, remote = 0, bytes = 0, tokens = 0;
  std::string tables_error;
  for (const auto& g : shared_->groups) {
    rpc::ArmStats* arm = out.add_arms();
    g->Fill(*arm);
    if (!arm->tables_error().empty()) {
      absl::StrAppend(&tables_error, tables_error.empty() ? "" : "; ",
                      arm->name().empty() ? "" : absl::StrCat("arm ", arm->name(), ": "),
                      arm->tables_error());
    }
    queued += g->rebatcher().Queued();
    if (g->rebatcher().policy() == Policy::kTime) {
      const TimeRuleCounters t = g->rebatcher().time_rule();
      rpc::TimeRuleStats& out_t = *out.mutable_time_rule();
      out_t.set_kept_time(out_t.kept_time() + t.kept_time);
      out_t.set_kept_least_loaded(out_t.kept_least_loaded() + t.kept_least_loaded);
      out_t.set_kept_round_robin(out_t.kept_round_robin() + t.kept_round_robin);
      out_t.set_last_predicted_ms(t.last_predicted_s * 1e3);
      out_t.set_last_vanilla_ms(t.last_vanilla_s * 1e3);
      out_t.set_cluster(o.cluster);
    }
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
  out.set_tables_error(tables_error);
  out.set_lar(local + remote == 0 ? 0.0 : static_cast<double>(local) / (local + remote));
  out.set_a2a_bytes_per_token(tokens == 0 ? 0.0 : static_cast<double>(bytes) / tokens);
  FillPercentiles(shared_->ttft, out.mutable_ttft_ms());
  FillPercentiles(shared_->tpot, out.mutable_tpot_ms());
  FillPercentiles(shared_->e2e, out.mutable_e2e_ms());
  FillPercentiles(shared_->queue, out.mutable_queue_ms());
  return out;
}

}  // namespace semmoe::router
