#include "engine/parallel/group_engine.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"

namespace semmoe::engine {
namespace {

using model::SequenceInput;

constexpr int kLeader = 0;

// An Attention-TP pass on the wire, as int64s: n, then per sequence start, tokens, logits mode,
// pages, previous token, the token ids, the page ids.
std::vector<int64_t> EncodePass(absl::Span<const SequenceInput> batch) {
  std::vector<int64_t> wire = {static_cast<int64_t>(batch.size())};
  for (const SequenceInput& seq : batch) {
    // The batch engine's sequences are always paged (BatchEngine owns them).
    const auto& paged = static_cast<const runtime::PagedSequence&>(*seq.kv);
    wire.push_back(seq.start_position);
    wire.push_back(static_cast<int64_t>(seq.tokens.size()));
    wire.push_back(static_cast<int64_t>(seq.logits));
    wire.push_back(static_cast<int64_t>(paged.pages().size()));
    wire.push_back(seq.prev_token);
    wire.insert(wire.end(), seq.tokens.begin(), seq.tokens.end());
    wire.insert(wire.end(), paged.pages().begin(), paged.pages().end());
  }
  return wire;
}

}  // namespace

GroupEngine::GroupEngine(RankModel& model, const GroupEngineOptions& options)
    : model_(model), options_(options) {}

absl::StatusOr<std::unique_ptr<GroupEngine>> GroupEngine::Create(
    RankModel& model, const GroupEngineOptions& options) {
  std::unique_ptr<GroupEngine> engine(new GroupEngine(model, options));
  GroupEngine* self = engine.get();
  const bool tp = model.attention() == AttentionMode::kTp;
  const int rank = model.comm().rank();
  engine->forward_ = options.device != nullptr ? options.device : model.forward();
  if (engine->forward_ == nullptr) {
    return absl::InvalidArgumentError(
        "the rank has no forward: its RankModel was made without a CPU forward and no device "
        "forward was given");
  }
  runtime::PagedKvCache::Options kv{
      .num_layers = model.local_num_layers(),
      .shape = model.local_kv_shape(),
      .page_size = options.batch.page_size,
      .num_pages = runtime::PagedKvCache::PagesForModel(
          model.local_config(), options.batch.page_size, options.batch.kv_cache_bytes)};
  if (options.device == nullptr && kv.num_pages != model.kv_pages()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the batch's KV cache (", kv.num_pages, " pages of ", kv.page_size,
        ") is not the rank forward's arena (", model.kv_pages(),
        " pages): give RankModelOptions and BatchEngine::Options the same page_size and "
        "kv_cache_bytes"));
  }
  if (!tp || rank == kLeader) {
    runtime::BatchEngine::Options batch = options.batch;
    batch.forward_every_step = true;
    batch.forward = [self](absl::Span<const SequenceInput> b) { return self->Forward(b); };
    ASSIGN_OR_RETURN(engine->batch_, runtime::BatchEngine::Create(model.local_config(), batch));
  } else {
    ASSIGN_OR_RETURN(engine->mirror_kv_, runtime::PagedKvCache::Create(kv));
  }
  {
    absl::MutexLock lock(&engine->mu_);
    engine->stats_.rank = rank;
    engine->stats_.ranks = model.comm().size();
    engine->stats_.attention = AttentionModeName(model.attention());
    engine->stats_.accepts_requests = engine->batch_ != nullptr;
  }
  return engine;
}

GroupEngine::~GroupEngine() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
}

void GroupEngine::Start() {
  thread_ = std::thread([this] {
    result_ = Loop();
    FailAll(result_.ok() ? absl::UnavailableError("the engine is stopping")
                         : absl::UnavailableError(absl::StrCat("the expert-parallel group failed: ",
                                                               result_.message())));
    {
      absl::MutexLock lock(&mu_);
      ended_ = true;
    }
    Snapshot();
    done_.Notify();
  });
}

absl::Status GroupEngine::Submit(runtime::GenerationRequest request,
                                 std::shared_ptr<RequestSink> sink) {
  if (batch_ == nullptr) {
    return absl::FailedPreconditionError(
        "this rank is an Attention-TP follower; send requests to rank 0");
  }
  absl::MutexLock lock(&mu_);
  if (ended_ || stop_requested_) return absl::UnavailableError("the engine is stopping");
  if (static_cast<int>(inbox_.size()) >= options_.max_inbox) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the engine's queue is full (", options_.max_inbox, " requests)"));
  }
  inbox_.emplace_back(std::move(request), std::move(sink));
  return absl::OkStatus();
}

void GroupEngine::Cancel(const std::string& id) {
  absl::MutexLock lock(&mu_);
  cancels_.push_back(id);
}

void GroupEngine::RequestStop() {
  absl::MutexLock lock(&mu_);
  stop_requested_ = true;
}

absl::Status GroupEngine::Wait() {
  done_.WaitForNotification();
  return result_;
}

GroupEngineStats GroupEngine::stats() const {
  GroupEngineStats s;
  {
    absl::MutexLock lock(&mu_);
    s = stats_;
  }
  if (options_.rollout != nullptr) s.rollout = options_.rollout->stats();
  s.collective_wait_s = collective_wait_s();
  if (options_.routing_sampler != nullptr) {
    s.samples_routing = true;
    s.routing_samples = options_.routing_sampler->stats();
  }
  return s;
}

void GroupEngine::DrainInbox() {
  std::deque<std::pair<runtime::GenerationRequest, std::shared_ptr<RequestSink>>> inbox;
  std::vector<std::string> cancels;
  {
    absl::MutexLock lock(&mu_);
    inbox.swap(inbox_);
    cancels.swap(cancels_);
  }
  for (auto& [request, sink] : inbox) {
    const std::string id = request.id;
    if (sinks_.contains(id)) {
      sink->OnError(absl::AlreadyExistsError(absl::StrCat("request ", id, " is in flight")));
      continue;
    }
    absl::Status status = batch_->Submit(std::move(request));
    if (!status.ok()) {
      {
        absl::MutexLock lock(&mu_);
        ++stats_.failed;
      }
      sink->OnError(status);
      continue;
    }
    sinks_[id] = std::move(sink);
    submitted_[id] = absl::Now();
  }
  for (const std::string& id : cancels) {
    auto it = sinks_.find(id);
    if (it == sinks_.end()) continue;
    batch_->Cancel(id);
    submitted_.erase(id);
    {
      absl::MutexLock lock(&mu_);
      ++stats_.cancelled;
    }
    it->second->OnError(absl::CancelledError(absl::StrCat("request ", id, " was cancelled")));
    sinks_.erase(it);
  }
}

absl::Status GroupEngine::Loop() {
  Communicator& comm = model_.comm();
  const int g = comm.size();
  const bool tp = model_.attention() == AttentionMode::kTp;
  // Per rank: busy, stopping, its serving counters (GroupEngineStats::GroupServing: completed,
  // failed, local and remote activations, output tokens, request microseconds), under DP the
  // tokens of the pass it has planned (-1: none), then the rollout's words (zeros without one).
  constexpr int kCounters = 6, kPassTokens = 2 + kCounters, kRollout = kPassTokens + 1;
  constexpr int kWords = kRollout + PlacementRollout::kWords;
  const std::vector<int64_t> counts(g, kWords);
  std::vector<int64_t> all(kWords * g), rollout(PlacementRollout::kWords * g);
  int idle_rounds = 0;
  for (int64_t round = 1;; ++round) {
    if (batch_ != nullptr) DrainInbox();
    int64_t mine[kWords] = {batch_ != nullptr && !batch_->idle() ? 1 : 0, 0};
    // The next pass planned now, so that every rank knows every rank's pass size before it (the
    // holder choice's routing gather needs them; agreed here, they cost no collective of their
    // own).
    mine[kPassTokens] = !tp && batch_ != nullptr ? batch_->Plan() : -1;
    {
      absl::MutexLock lock(&mu_);
      mine[1] = stop_requested_ ? 1 : 0;
      mine[2] = stats_.completed;
      mine[3] = stats_.failed;
      mine[4] = own_local_activations_;
      mine[5] = own_remote_activations_;
      mine[6] = stats_.output_tokens;
      mine[7] = stats_.request_micros;
    }
    if (options_.rollout != nullptr) {
      options_.rollout->Local(absl::MakeSpan(mine + kRollout, kWords - kRollout));
    }
    RETURN_IF_ERROR(
        comm.AllGatherV(absl::MakeConstSpan(mine, kWords), counts, absl::MakeSpan(all)));
    rounds_ = round;
    bool busy = false, stop = false;
    GroupEngineStats::GroupServing serving;
    pass_tokens_.assign(g, 0);
    for (int r = 0; r < g; ++r) {
      const int64_t* w = &all[kWords * r];
      busy |= w[0] != 0 && (!tp || r == kLeader);
      stop |= w[1] != 0;
      serving.completed += w[2];
      serving.failed += w[3];
      serving.local_activations += w[4];
      serving.remote_activations += w[5];
      serving.output_tokens += w[6];
      serving.request_seconds += static_cast<double>(w[7]) * 1e-6;
      pass_tokens_[r] = w[kPassTokens];
      for (int i = kRollout; i < kWords; ++i) {
        rollout[(kWords - kRollout) * r + i - kRollout] = w[i];
      }
    }
    {
      absl::MutexLock lock(&mu_);
      stats_.group_serving = serving;
    }
    if (std::any_of(pass_tokens_.begin(), pass_tokens_.end(), [](int64_t t) { return t < 0; })) {
      pass_tokens_.clear();  // Some rank plans no pass of its own (Attention-TP).
    }
    if (stop) return absl::OkStatus();
    if (options_.rollout != nullptr) RETURN_IF_ERROR(options_.rollout->Agree(rollout, round));
    if (!busy) {
      if (idle_rounds == 0) Snapshot();  // The gauges (running, waiting) settle at idle too.
      absl::SleepFor(++idle_rounds > 50 ? options_.max_idle_poll : options_.idle_poll);
      continue;
    }
    idle_rounds = 0;
    if (batch_ != nullptr) {
      std::vector<runtime::GenerationResult> finished;
      std::vector<runtime::TokenEvent> events;
      RETURN_IF_ERROR(batch_->Step(finished, &events));
      RETURN_IF_ERROR(Deliver(finished, events));
    } else {
      RETURN_IF_ERROR(FollowerPass());
    }
    Snapshot();
  }
}

absl::StatusOr<model::ForwardOutput> GroupEngine::Forward(absl::Span<const SequenceInput> batch) {
  if (model_.attention() == AttentionMode::kTp) {
    std::vector<int64_t> wire = EncodePass(batch);
    std::vector<int64_t> size = {static_cast<int64_t>(wire.size())};
    RETURN_IF_ERROR(model_.comm().Broadcast(absl::MakeSpan(size), kLeader));
    RETURN_IF_ERROR(model_.comm().Broadcast(absl::MakeSpan(wire), kLeader));
  }
  RoutingSampler* sampler = model_.attention() == AttentionMode::kDp &&
                                    options_.routing_sampler != nullptr &&
                                    !options_.routing_sampler->paused()
                                ? options_.routing_sampler
                                : nullptr;
  // The pass sizes agreed for this step (Loop), used once.
  model::ForwardOptions forward_options{.collect_routing = sampler != nullptr,
                                        .rank_tokens = std::move(pass_tokens_)};
  pass_tokens_.clear();
  ASSIGN_OR_RETURN(model::ForwardOutput out, forward_->Forward(batch, forward_options));
  if (sampler != nullptr) sampler->Observe(batch, out);
  ++forward_passes_;
  AddAttentionTimes(out);
  return out;
}

absl::Status GroupEngine::FollowerPass() {
  Communicator& comm = model_.comm();
  std::vector<int64_t> size(1);
  RETURN_IF_ERROR(comm.Broadcast(absl::MakeSpan(size), kLeader));
  if (size[0] < 1 || size[0] > (int64_t{1} << 32)) {
    return absl::InternalError(
        absl::StrCat("Attention-TP leader sent a pass of ", size[0], " words"));
  }
  std::vector<int64_t> wire(size[0]);
  RETURN_IF_ERROR(comm.Broadcast(absl::MakeSpan(wire), kLeader));
  // Decode (the leader is trusted, but a malformed pass is an error, not a crash).
  const absl::Status malformed = absl::InternalError("malformed Attention-TP pass from rank 0");
  size_t at = 0;
  auto next = [&](int64_t& v) {
    if (at >= wire.size()) return false;
    v = wire[at++];
    return true;
  };
  int64_t n = 0;
  if (!next(n) || n < 0) return malformed;
  std::vector<std::vector<int32_t>> tokens(n);
  std::vector<std::unique_ptr<runtime::PageTableView>> views(n);
  std::vector<SequenceInput> batch(n);
  for (int64_t s = 0; s < n; ++s) {
    int64_t start, count, logits, pages, prev;
    if (!next(start) || !next(count) || !next(logits) || !next(pages) || !next(prev) || count < 0 ||
        pages < 0 || logits < 0 || logits > 2 || prev < -1 || prev > INT32_MAX ||
        at + count + pages > wire.size()) {
      return malformed;
    }
    tokens[s].assign(wire.begin() + at, wire.begin() + at + count);
    at += count;
    ASSIGN_OR_RETURN(views[s], mirror_kv_->View(std::vector<int32_t>(wire.begin() + at,
                                                                     wire.begin() + at + pages)));
    at += pages;
    batch[s] = {.tokens = tokens[s],
                .start_position = static_cast<int>(start),
                .kv = views[s].get(),
                .logits = static_cast<model::LogitsMode>(logits),
                .prev_token = static_cast<int32_t>(prev)};
  }
  ASSIGN_OR_RETURN(model::ForwardOutput out, forward_->Forward(batch, {}));
  ++forward_passes_;
  AddAttentionTimes(out);
  return absl::OkStatus();
}

void GroupEngine::AddAttentionTimes(const model::ForwardOutput& out) {
  attention_seconds_ += out.attention_seconds;
  if (attention_seconds_per_layer_.size() < out.attention_seconds_per_layer.size()) {
    attention_seconds_per_layer_.resize(out.attention_seconds_per_layer.size(), 0.0);
  }
  for (size_t l = 0; l < out.attention_seconds_per_layer.size(); ++l) {
    attention_seconds_per_layer_[l] += out.attention_seconds_per_layer[l];
  }
}

absl::Status GroupEngine::Deliver(const std::vector<runtime::GenerationResult>& finished,
                                  const std::vector<runtime::TokenEvent>& events) {
  for (const runtime::TokenEvent& e : events) {
    auto it = sinks_.find(e.request_id);
    if (it != sinks_.end()) it->second->OnToken(e.token, e.text);
  }
  for (const runtime::GenerationResult& result : finished) {
    auto it = sinks_.find(result.id);
    if (it == sinks_.end()) continue;
    int64_t micros = 0;
    if (auto at = submitted_.find(result.id); at != submitted_.end()) {
      micros = absl::ToInt64Microseconds(absl::Now() - at->second);
      submitted_.erase(at);
    }
    {
      absl::MutexLock lock(&mu_);  // Counted before the client can see the result.
      ++stats_.completed;
      stats_.output_tokens += static_cast<int64_t>(result.tokens.size());
      stats_.request_micros += micros;
    }
    it->second->OnDone(result);
    sinks_.erase(it);
  }
  return absl::OkStatus();
}

void GroupEngine::FailAll(const absl::Status& status) {
  for (auto& [id, sink] : sinks_) {
    if (batch_ != nullptr) batch_->Cancel(id);
    sink->OnError(status);
  }
  std::deque<std::pair<runtime::GenerationRequest, std::shared_ptr<RequestSink>>> inbox;
  {
    absl::MutexLock lock(&mu_);
    stats_.failed += static_cast<int64_t>(sinks_.size() + inbox_.size());
    inbox.swap(inbox_);
  }
  sinks_.clear();
  submitted_.clear();
  for (auto& [request, sink] : inbox) sink->OnError(status);
}

void GroupEngine::Snapshot() {
  GroupEngineStats s;
  {
    absl::MutexLock lock(&mu_);
    s = stats_;
  }
  if (batch_ != nullptr) {
    s.batch = batch_->stats();
    s.running = batch_->running();
    s.waiting = batch_->waiting();
    const runtime::PagedKvCache& kv = batch_->kv_cache();
    s.kv_free_tokens = static_cast<int64_t>(kv.free_pages()) * kv.page_size();
    s.kv_total_tokens = static_cast<int64_t>(kv.total_pages()) * kv.page_size();
  }
  s.forward_passes = forward_passes_;
  s.agreement_rounds = rounds_;  // With the communicator's counters below: the same moment.
  s.attention_seconds = attention_seconds_;
  s.attention_seconds_per_layer = attention_seconds_per_layer_;
  if (model_.tp_counters() != nullptr) s.tp = *model_.tp_counters();
  s.comm = model_.comm().counters();
  {
    RankForwardCounters d = forward_->counters();
    s.layers = std::move(d.layers);
    if (d.has_comm) {  // A device group's collectives, over the host group's.
      for (int k = 0; k < kNumCollectiveKinds; ++k) {
        s.comm.by_kind[k].calls += d.comm.by_kind[k].calls;
        s.comm.by_kind[k].bytes_sent += d.comm.by_kind[k].bytes_sent;
        s.comm.by_kind[k].bytes_received += d.comm.by_kind[k].bytes_received;
      }
    }
  }
  int64_t local = 0, remote = 0;
  for (const MoeLayerCounters& layer : s.layers) {
    local += layer.local_activations;
    remote += layer.remote_activations;
  }
  absl::MutexLock lock(&mu_);
  // Keep the request counters updated concurrently under the lock.
  s.completed = stats_.completed;
  s.failed = stats_.failed;
  s.cancelled = stats_.cancelled;
  s.output_tokens = stats_.output_tokens;
  s.request_micros = stats_.request_micros;
  s.group_serving = stats_.group_serving;  // Set by the loop's agreement rounds.
  own_local_activations_ = local;          // For the next agreement round.
  own_remote_activations_ = remote;
  stats_ = std::move(s);
}

}  // namespace semmoe::engine
