#include "engine/server/engine_service.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/security.h"
#include "common/status_macros.h"
#include "engine/text/prompt.h"

namespace semmoe::engine {

using Response = rpc::GenerateResponse;

// One Generate call: the engine's sink on one side, the write reactor on the other. Shared by
// both (the engine may call the sink after gRPC is done with the reactor); all state under mu_,
// and every reactor operation is issued outside it (a reaction may run inline).
class GenerateStream : public RequestSink, public std::enable_shared_from_this<GenerateStream> {
 public:
  GenerateStream(std::shared_ptr<GroupEngine> engine, std::string id, int rank,
                 std::function<void(const GenerateStream*)> on_done)
      : engine_(std::move(engine)),
        id_(std::move(id)),
        rank_(rank),
        start_(absl::Now()),
        on_done_(std::move(on_done)) {}

  void Attach(grpc::ServerWriteReactor<Response>* reactor) {
    absl::MutexLock lock(&mu_);
    reactor_ = reactor;
  }

  // RequestSink (the engine's loop thread).
  void OnToken(int32_t token, absl::string_view text) override {
    {
      absl::MutexLock lock(&mu_);
      if (!first_token_.has_value()) first_token_ = absl::Now();
      pending_.push_back(token);
      pending_text_.append(text.data(), text.size());
    }
    Pump();
  }
  void OnDone(const runtime::GenerationResult& result) override {
    {
      absl::MutexLock lock(&mu_);
      rpc::FinalRecord& f = final_.emplace();
      f.set_request_id(result.id);
      f.set_prompt_tokens(result.prompt_tokens);
      f.set_completion_tokens(static_cast<int32_t>(result.tokens.size()));
      f.set_finish_reason(runtime::FinishReasonName(result.finish));
      f.set_text(result.text);  // Valid UTF-8 (model::TextStream).
      f.set_rank(rank_);
      const absl::Time now = absl::Now();
      f.set_ttft_ms(absl::ToDoubleMilliseconds(first_token_.value_or(now) - start_));
      f.set_e2e_ms(absl::ToDoubleMilliseconds(now - start_));
      f.set_preemptions(result.preemptions);
      f.set_local_activations(result.local_activations);
      f.set_activations(result.activations);
    }
    Pump();
  }
  void OnError(const absl::Status& status) override {
    {
      absl::MutexLock lock(&mu_);
      error_ = status;
    }
    Pump();
  }

  // Reactor side (gRPC threads).
  void WriteDone(bool ok) {
    bool finish_now = false;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) {
        broken_ = true;
      } else if (final_sent_) {
        finish_now = true;
      }
    }
    if (!ok) {
      // The client is gone: the request is cancelled in the engine and the call ends now (the
      // engine's later OnError finds it ended). Waiting for the engine instead would leave a
      // call whose final write failed, or whose engine has stopped, unfinished for ever — and
      // the server's shutdown waiting on it.
      engine_->Cancel(id_);
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client stream broke"));
      return;
    }
    if (finish_now) Finish(grpc::Status::OK);
    Pump();
  }
  void Cancelled() { engine_->Cancel(id_); }
  void Done() {
    {
      absl::MutexLock lock(&mu_);
      reactor_ = nullptr;
    }
    if (on_done_) on_done_(this);
  }

  // Ends the call with `status` unless it already ended or sent its result; cancels the request.
  bool Abort(const absl::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      if (finished_ || final_sent_ || error_.has_value()) return false;
      error_ = status;
    }
    engine_->Cancel(id_);
    Pump();
    return true;
  }

  // Immediately ends the call (the engine never took the request).
  void Finish(const grpc::Status& status) {
    grpc::ServerWriteReactor<Response>* reactor;
    {
      absl::MutexLock lock(&mu_);
      if (finished_ || reactor_ == nullptr) return;
      finished_ = true;
      reactor = reactor_;
    }
    reactor->Finish(status);
  }

 private:
  // Issues the next write, or the end of the call, if one is due.
  void Pump() {
    grpc::ServerWriteReactor<Response>* reactor = nullptr;
    std::optional<grpc::Status> finish;
    {
      absl::MutexLock lock(&mu_);
      if (reactor_ == nullptr || finished_ || writing_ || final_sent_) return;
      if (error_.has_value()) {
        finished_ = true;
        finish = ToGrpcStatus(*error_);
      } else if (broken_) {
        return;  // Ended in WriteDone.
      } else if (!pending_.empty() || final_.has_value()) {
        out_.Clear();
        for (int32_t t : pending_) out_.add_token_ids(t);
        pending_.clear();
        out_.set_text(std::move(pending_text_));
        pending_text_.clear();
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
      reactor->Finish(*finish);
    } else {
      reactor->StartWrite(&out_);
    }
  }

  const std::shared_ptr<GroupEngine> engine_;  // Keeps its group's incarnation alive.
  const std::string id_;
  const int rank_;
  const absl::Time start_;
  const std::function<void(const GenerateStream*)> on_done_;
  absl::Mutex mu_;
  grpc::ServerWriteReactor<Response>* reactor_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::vector<int32_t> pending_ ABSL_GUARDED_BY(mu_);
  std::string pending_text_ ABSL_GUARDED_BY(mu_);  // The pending tokens' text.
  std::optional<absl::Time> first_token_ ABSL_GUARDED_BY(mu_);
  std::optional<rpc::FinalRecord> final_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> error_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool final_sent_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  Response out_;  // The message in flight (only touched between StartWrite and WriteDone).
};

namespace {

class GenerateReactor : public grpc::ServerWriteReactor<Response> {
 public:
  explicit GenerateReactor(std::shared_ptr<GenerateStream> stream) : stream_(std::move(stream)) {
    stream_->Attach(this);
  }
  void OnWriteDone(bool ok) override { stream_->WriteDone(ok); }
  void OnCancel() override { stream_->Cancelled(); }
  void OnDone() override {
    stream_->Done();
    delete this;
  }

 private:
  std::shared_ptr<GenerateStream> stream_;
};

// A reactor that only reports an error.
class ErrorReactor : public grpc::ServerWriteReactor<Response> {
 public:
  explicit ErrorReactor(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

absl::StatusOr<runtime::GenerationRequest> EngineServiceImpl::Convert(
    const rpc::GenerateRequest& request) {
  runtime::GenerationRequest out;
  out.id = request.request_id().empty() ? absl::StrCat("req-", next_id_.fetch_add(1))
                                        : request.request_id();
  ASSIGN_OR_RETURN(out.prompt,
                   model::CheckPrompt(request.text(), request.token_ids(), request.max_tokens(),
                                      {.tokenizer = options_.tokenizer,
                                       .vocab_size = options_.vocab_size,
                                       .max_prompt_tokens = options_.max_prompt_tokens}));
  out.max_tokens = request.max_tokens();
  const rpc::SamplingParams& s = request.sampling();
  out.sampling.temperature = s.temperature();
  out.sampling.top_k = s.top_k();
  out.sampling.top_p = s.top_p() == 0 ? 1.0f : s.top_p();
  out.sampling.seed = s.seed();
  out.stop.assign(request.stop().begin(), request.stop().end());
  out.ignore_eos = request.ignore_eos();
  return out;
}

void EngineSlot::Serve(std::shared_ptr<GroupEngine> engine, int64_t epoch) {
  absl::MutexLock lock(&mu_);
  engine_ = std::move(engine);
  epoch_ = epoch;
  down_.clear();
}

void EngineSlot::Down(std::string reason) {
  absl::MutexLock lock(&mu_);
  engine_.reset();
  down_ = std::move(reason);
}

std::shared_ptr<GroupEngine> EngineSlot::engine() const {
  absl::MutexLock lock(&mu_);
  return engine_;
}

std::string EngineSlot::down_reason() const {
  absl::MutexLock lock(&mu_);
  return down_;
}

int64_t EngineSlot::epoch() const {
  absl::MutexLock lock(&mu_);
  return epoch_;
}

EngineServiceImpl::EngineServiceImpl(GroupEngine& engine, const Options& options)
    : slot_(own_slot_), options_(options) {
  own_slot_.Serve(std::shared_ptr<GroupEngine>(&engine, [](GroupEngine*) {}), 0);
}

std::string EngineServiceImpl::Unavailable(const GroupEngine* engine) const {
  if (engine == nullptr) return slot_.down_reason();
  const double wait_s = engine->collective_wait_s();
  if (wait_s > absl::ToDoubleSeconds(options_.stall_after)) {
    return absl::StrFormat(
        "a collective has waited %.1f s for the group's other ranks (one stalled or dead?)",
        wait_s);
  }
  return "";
}

void EngineServiceImpl::Forget(const GenerateStream* stream) {
  absl::MutexLock lock(&streams_mu_);
  streams_.erase(stream);
}

int EngineServiceImpl::AbortIfStalled() {
  const std::shared_ptr<GroupEngine> engine = slot_.engine();
  if (engine == nullptr) return 0;
  const std::string why = Unavailable(engine.get());
  if (why.empty()) return 0;
  return AbortAll(absl::UnavailableError(absl::StrCat("rank ", options_.rank, ": ", why)));
}

int EngineServiceImpl::AbortAll(const absl::Status& status) {
  std::vector<std::shared_ptr<GenerateStream>> live;
  {
    absl::MutexLock lock(&streams_mu_);
    for (auto& [key, weak] : streams_) {
      if (auto s = weak.lock()) live.push_back(std::move(s));
    }
  }
  int ended = 0;
  for (const auto& s : live) ended += s->Abort(status) ? 1 : 0;
  return ended;
}

grpc::ServerWriteReactor<Response>* EngineServiceImpl::Generate(
    grpc::CallbackServerContext* context, const rpc::GenerateRequest* request) {
  absl::StatusOr<runtime::GenerationRequest> converted = Convert(*request);
  if (!converted.ok()) return new ErrorReactor(converted.status());
  std::shared_ptr<GroupEngine> engine = slot_.engine();
  if (const std::string why = Unavailable(engine.get()); !why.empty()) {
    return new ErrorReactor(
        absl::UnavailableError(absl::StrCat("rank ", options_.rank, ": ", why)));
  }
  auto stream = std::make_shared<GenerateStream>(engine, converted->id, engine->rank(),
                                                 [this](const GenerateStream* s) { Forget(s); });
  {
    absl::MutexLock lock(&streams_mu_);
    streams_[stream.get()] = stream;
  }
  auto* reactor = new GenerateReactor(stream);
  const absl::Status submitted = engine->Submit(std::move(*converted), stream);
  if (!submitted.ok()) stream->Finish(ToGrpcStatus(submitted));
  return reactor;
}

grpc::ServerUnaryReactor* EngineServiceImpl::Rollout(grpc::CallbackServerContext* context,
                                                     const rpc::RolloutRequest* request,
                                                     rpc::RolloutResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (grpc::Status auth = CheckToken(*context); !auth.ok()) {  // A mutation.
    reactor->Finish(auth);
    return reactor;
  }
  if (!options_.rollout) {
    reactor->Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                 "this rank does not take rollouts (only rank 0 of a group "
                                 "started with --planner does)"));
  } else if (request->version() <= 0) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "Rollout needs a placement version (a positive number)"));
  } else {
    options_.rollout(request->version());
    reactor->Finish(grpc::Status::OK);
  }
  return reactor;
}

grpc::ServerUnaryReactor* EngineServiceImpl::GetStats(grpc::CallbackServerContext* context,
                                                      const rpc::GetStatsRequest* request,
                                                      rpc::EngineStats* response) {
  *response = Stats();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

rpc::EngineStats EngineServiceImpl::Stats() const {
  rpc::EngineStats out;
  const std::shared_ptr<GroupEngine> engine = slot_.engine();
  out.set_group_epoch(slot_.epoch());
  if (engine == nullptr) {
    out.set_rank(options_.rank);
    out.set_ranks(options_.ranks);
    out.set_attention(options_.attention);
    out.set_topology(options_.topology);
    out.set_node_dedup(options_.node_dedup);
    out.set_accepts_requests(false);
    out.set_unavailable(slot_.down_reason());
    return out;
  }
  const GroupEngineStats stats = engine->stats();
  ToProto(stats, options_.moe_layers, out);
  out.set_topology(options_.topology);
  out.set_node_dedup(options_.node_dedup);
  out.set_collective_wait_s(stats.collective_wait_s);
  if (const std::string why = Unavailable(engine.get()); !why.empty()) {
    out.set_unavailable(why);
    out.set_accepts_requests(false);
  }
  if (options_.watch_error) {
    out.mutable_rollout()->set_follows_active(true);
    // A refused version's reason first; else whether the watch is down.
    if (out.rollout().error().empty()) out.mutable_rollout()->set_error(options_.watch_error());
  }
  return out;
}

void ToProto(const GroupEngineStats& s, const std::vector<int>& moe_layers, rpc::EngineStats& out) {
  out.set_rank(s.rank);
  out.set_ranks(s.ranks);
  out.set_attention(s.attention);
  out.set_accepts_requests(s.accepts_requests);
  out.set_running(s.running);
  out.set_waiting(s.waiting);
  out.set_completed(s.completed);
  out.set_failed(s.failed);
  out.set_cancelled(s.cancelled);
  rpc::GroupServing& group = *out.mutable_group_serving();
  group.set_completed(s.group_serving.completed);
  group.set_failed(s.group_serving.failed);
  group.set_local_activations(s.group_serving.local_activations);
  group.set_remote_activations(s.group_serving.remote_activations);
  group.set_output_tokens(s.group_serving.output_tokens);
  group.set_request_seconds(s.group_serving.request_seconds);
  out.set_forward_passes(s.forward_passes);
  out.set_prefill_tokens(s.batch.prefill_tokens);
  out.set_decode_tokens(s.batch.decode_tokens);
  out.set_preemptions(s.batch.preemptions);
  out.set_kv_free_tokens(s.kv_free_tokens);
  out.set_kv_total_tokens(s.kv_total_tokens);
  out.set_attention_seconds(s.attention_seconds);
  out.set_srs_seconds(s.tp.srs_seconds);
  out.set_sag_seconds(s.tp.sag_seconds);
  int64_t local = 0, remote = 0;
  std::vector<int64_t> peer_bytes;
  for (const MoeLayerCounters& c : s.layers) {
    peer_bytes.resize(std::max(peer_bytes.size(), c.bytes_to_peer.size()), 0);
    for (size_t p = 0; p < c.bytes_to_peer.size(); ++p) peer_bytes[p] += c.bytes_to_peer[p];
  }
  for (int64_t b : peer_bytes) out.add_peer_bytes_sent(b);
  for (size_t i = 0; i < s.layers.size(); ++i) {
    const MoeLayerCounters& c = s.layers[i];
    rpc::MoeLayerStats* l = out.add_layers();
    l->set_layer(i < moe_layers.size() ? moe_layers[i] : static_cast<int>(i));
    l->set_tokens(c.tokens);
    l->set_local_activations(c.local_activations);
    l->set_remote_activations(c.remote_activations);
    const int64_t all = c.local_activations + c.remote_activations;
    l->set_lar(all == 0 ? 0.0 : static_cast<double>(c.local_activations) / all);
    l->set_dispatch_bytes_sent(c.dispatch_bytes_sent);
    l->set_dispatch_bytes_received(c.dispatch_bytes_received);
    l->set_combine_bytes_sent(c.combine_bytes_sent);
    l->set_combine_bytes_received(c.combine_bytes_received);
    l->set_dispatch_seconds(c.dispatch_seconds);
    l->set_expert_seconds(c.expert_seconds);
    l->set_combine_seconds(c.combine_seconds);
    l->set_dispatch_wait_seconds(c.dispatch_wait_seconds);
    l->set_calls(c.calls);
    l->set_served_activations(c.served_activations);
    l->mutable_expert_activations()->Add(c.expert_activations.begin(), c.expert_activations.end());
    l->set_cross_node_bytes_sent(c.cross_node_bytes_sent);
    l->set_cross_node_bytes_received(c.cross_node_bytes_received);
    l->set_intra_node_bytes_sent(c.intra_node_bytes_sent);
    l->set_intra_node_bytes_received(c.intra_node_bytes_received);
    local += c.local_activations;
    remote += c.remote_activations;
  }
  out.set_lar(local + remote == 0 ? 0.0 : static_cast<double>(local) / (local + remote));
  for (size_t l = 0; l < s.attention_seconds_per_layer.size(); ++l) {
    rpc::LayerTimes* t = out.add_layer_times();
    t->set_layer(static_cast<int>(l));
    t->set_attention_seconds(s.attention_seconds_per_layer[l]);
    if (l < s.tp.srs_seconds_per_layer.size()) {
      t->set_srs_seconds(s.tp.srs_seconds_per_layer[l]);
      t->set_sag_seconds(s.tp.sag_seconds_per_layer[l]);
    }
  }
  const RolloutStats& r = s.rollout;
  out.set_placement_version(r.serving_version);
  rpc::RolloutStats* ro = out.mutable_rollout();
  ro->set_target_version(r.target_version);
  ro->set_experts_to_load(r.experts_to_load);
  ro->set_experts_loaded(r.experts_loaded);
  ro->set_staged_bytes(r.staged_bytes);
  ro->set_staged(r.staged);
  ro->set_epoch(r.epoch);
  ro->set_switch_round(r.switch_round);
  ro->set_refused_version(r.refused_version);
  ro->set_refusals(r.refusals);
  ro->set_error(r.last_error);
  ro->set_last_stage_seconds(r.last_stage_seconds);
  ro->set_last_switch_ms(r.last_switch_ms);
  ro->set_last_experts_loaded(r.last_experts_loaded);
  ro->set_last_experts_freed(r.last_experts_freed);
  ro->set_last_bytes_loaded(r.last_bytes_loaded);
  ro->set_last_bytes_freed(r.last_bytes_freed);
  ro->set_peak_staged_bytes(r.peak_staged_bytes);
  if (s.samples_routing) {
    const RoutingSampleStats& rs = s.routing_samples;
    rpc::RoutingSampleStats* o = out.mutable_routing_samples();
    o->set_path(rs.path);
    o->set_share(rs.share);
    o->set_requests(rs.requests);
    o->set_tokens(rs.tokens);
    o->set_dropped_tokens(rs.dropped_tokens);
    o->set_flushes(rs.flushes);
    o->set_error(rs.error);
  }
  for (int k = 0; k < kNumCollectiveKinds; ++k) {
    const CollectiveCounters& c = s.comm.by_kind[k];
    rpc::CollectiveStats* cs = out.add_collectives();
    cs->set_name(CollectiveName(static_cast<CollectiveKind>(k)));
    cs->set_calls(c.calls);
    cs->set_bytes_sent(c.bytes_sent);
    cs->set_bytes_received(c.bytes_received);
    cs->set_seconds(c.seconds);
  }
}

}  // namespace semmoe::engine
