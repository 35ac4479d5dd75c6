#include "router/core/engine_group.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/security.h"
#include "grpcpp/grpcpp.h"
#include "planner/placement/holder_choice.h"
#include "planner/placement/hot_experts.h"

namespace semmoe::router {
namespace {

constexpr int kHotExperts = 8;  // The hottest experts per MoE layer in ArmStats.

nlohmann::json PercentilesJson(const LatencyWindow& w) {
  const PercentileSummary s = w.Summary();
  return {{"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"mean", s.mean}, {"count", s.count}};
}

}  // namespace

EngineGroup::EngineGroup(const GroupOptions& options) : options_(options), started_(absl::Now()) {
  for (const std::string& address : options.ranks) {
    stubs_.push_back(engine::rpc::EngineService::NewStub(semmoe::NewChannel(address)));
  }
  rebatcher_ = std::make_unique<Rebatcher>(static_cast<int>(options.ranks.size()), options.rebatch);
  rank_lar_.assign(options.ranks.size(), 0.0);
  counters_.assign(options.ranks.size(), {});
  load_windows_.assign(options.ranks.size(), LoadWindow(options.load_window));
}

std::shared_ptr<const RouterTables> EngineGroup::tables() const {
  return options_.tables == nullptr ? nullptr : options_.tables->Get();
}

namespace {

// Why a polled rank cannot take requests, in the operator's words ("" when it can).
std::string DownReason(const grpc::Status& s, const engine::rpc::EngineStats& stats) {
  if (s.ok()) {
    if (stats.accepts_requests()) return "";
    return stats.unavailable().empty() ? "answers but takes no requests" : stats.unavailable();
  }
  switch (s.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "no answer to stats within 1 s (stalled?)";
    case grpc::StatusCode::UNAVAILABLE:
      return absl::StrCat("unreachable (dead?): ", s.error_message());
    default:
      return absl::StrCat("stats failed: ", s.error_message());
  }
}

}  // namespace

void EngineGroup::Poll() {
  std::vector<int64_t> serving(size(), -1), targets(size(), 0);
  std::vector<grpc::Status> statuses(size());
  std::vector<engine::rpc::EngineStats> all(size());
  std::vector<std::string> reasons(size());
  // Every rank of a group runs every pass together: one rank down stops the group, so the others
  // take no requests either until it is back (a stalled peer would hold them in a collective).
  // The first down rank names why.
  std::string group_down;
  for (int r = 0; r < size(); ++r) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
    statuses[r] = stubs_[r]->GetStats(&context, engine::rpc::GetStatsRequest(), &all[r]);
    reasons[r] = DownReason(statuses[r], all[r]);
    if (!reasons[r].empty() && group_down.empty()) {
      group_down = absl::StrCat("its group's rank ", r, " is down (", reasons[r], ")");
    }
  }
  {
    absl::MutexLock lock(&mu_);
    SampleRate(options_.clock->Now());
  }
  for (int r = 0; r < size(); ++r) {
    const grpc::Status& status = statuses[r];
    const engine::rpc::EngineStats& stats = all[r];
    // (Engines that each form a group of one are independent: one down leaves the others be.)
    const std::string reason =
        !reasons[r].empty() ? reasons[r] : (stats.ranks() > 1 ? group_down : "");
    rebatcher_->SetUsable(r, reason.empty());
    {
      absl::MutexLock lock(&mu_);
      EngineCounters& c = counters_[r];
      if (reason.empty()) {
        c.down_since = absl::InfinitePast();
      } else if (c.down_reason.empty()) {
        c.down_since = absl::Now();
      }
      c.down_reason = reason;
    }
    if (!status.ok()) continue;
    rebatcher_->SetKvFree(r, stats.kv_total_tokens() > 0 ? stats.kv_free_tokens() : -1);
    EngineCounters c;
    c.down_reason = reason;
    ExpertLoad cumulative;  // Since the rank started; shown over the load window (Fill).
    for (const engine::rpc::MoeLayerStats& l : stats.layers()) {
      c.local += l.local_activations();
      c.remote += l.remote_activations();
      c.a2a_bytes += l.dispatch_bytes_sent() + l.combine_bytes_sent();
      c.moe_seconds += l.dispatch_seconds() + l.expert_seconds() + l.combine_seconds();
      c.moe_calls += l.calls();
      cumulative.served.emplace_back(l.layer(), l.served_activations());
      cumulative.per_expert.emplace_back(
          l.layer(),
          std::vector<int64_t>(l.expert_activations().begin(), l.expert_activations().end()));
    }
    c.tokens = stats.prefill_tokens() + stats.decode_tokens();
    c.placement_version = stats.placement_version();
    c.rollout = stats.rollout();
    serving[r] = stats.placement_version();
    targets[r] = stats.rollout().target_version();
    absl::MutexLock lock(&mu_);
    LoadWindow::Windowed load = load_windows_[r].Observe(options_.clock->Now(), cumulative);
    c.load = std::move(load.load);
    c.load_span = load.span;
    rank_lar_[r] = stats.lar();
    c.down_since = counters_[r].down_since;
    counters_[r] = c;
  }
  if (options_.follow != nullptr) options_.follow->Observe(serving, targets);
}

void EngineGroup::SampleRate(absl::Time now) {
  // The first-token rate, sampled at most every 100 ms (on each prediction under load, and at
  // each poll), over the intervals with prompts waiting at both ends: a queue that persisted, so
  // the group was busy (an idle group's rate says nothing of its capacity). The first 5 s of
  // such time are averaged whole (a first sample taken before any prefill ended must not stick);
  // then ~5 s of memory.
  if (now - last_sample_ < absl::Milliseconds(100)) return;
  const int64_t prefilled = prefilled_.load();
  const bool busy = pending_prefill_.load() > 0;
  if (last_sample_ != absl::InfinitePast() && busy && busy_at_sample_) {
    const double dt = absl::ToDoubleSeconds(now - last_sample_);
    const double tokens = static_cast<double>(prefilled - prefilled_at_sample_);
    if (rate_seconds_ < 5) {
      busy_tokens_ += tokens;
      rate_per_s_ = busy_tokens_ / (rate_seconds_ + dt);
    } else {
      const double keep = std::exp(-dt / 5.0);
      rate_per_s_ = keep * rate_per_s_ + (1 - keep) * tokens / dt;
    }
    rate_seconds_ += dt;
  }
  prefilled_at_sample_ = prefilled;
  busy_at_sample_ = busy;
  last_sample_ = now;
}

EngineGroup::WaitPrediction EngineGroup::PredictWait(int64_t prompt_tokens) {
  absl::MutexLock lock(&mu_);
  SampleRate(options_.clock->Now());
  WaitPrediction p;
  const int64_t ahead = pending_prefill_.load();
  p.queued_tokens = ahead + prompt_tokens;
  p.tokens_per_s = rate_per_s_;
  if (ahead > 0 && rate_seconds_ >= kMinRateSeconds) {
    // A group busy for that long without giving any prompt its first token is stuck: nothing
    // admitted now would start in time.
    p.wait =
        rate_per_s_ > 0 ? absl::Seconds(p.queued_tokens / rate_per_s_) : absl::InfiniteDuration();
  }
  return p;
}

bool EngineGroup::rolling_out() const {
  absl::MutexLock lock(&mu_);
  for (const EngineCounters& c : counters_) {
    if (c.rollout.target_version() > 0) return true;
  }
  return false;
}

double EngineGroup::rank_lar(int rank) const {
  absl::MutexLock lock(&mu_);
  return rank_lar_[rank];
}

void EngineGroup::Completed(const rpc::FinalRecord& f) {
  completed_.fetch_add(1);
  completion_tokens_.fetch_add(f.completion_tokens());
  prompt_tokens_.fetch_add(f.prompt_tokens());
  if (f.completion_tokens() > 0) {
    ttft_.Add(f.ttft_ms());
    ttft_s_.Observe(f.ttft_ms() / 1000);
  }
  if (f.completion_tokens() > 1) {
    tpot_.Add(f.tpot_ms());
    tpot_s_.Observe(f.tpot_ms() / 1000);
  }
  e2e_.Add(f.e2e_ms());
  e2e_s_.Observe(f.e2e_ms() / 1000);
  queue_s_.Observe(f.queue_ms() / 1000);
  if (f.ttft_ms() <= options_.slo_ttft_ms && f.tpot_ms() <= options_.slo_tpot_ms) {
    within_slo_.fetch_add(1);
  }
}

EngineGroup::Telemetry EngineGroup::telemetry() const {
  return {.ttft = ttft_s_.Snapshot(),
          .tpot = tpot_s_.Snapshot(),
          .e2e = e2e_s_.Snapshot(),
          .queue = queue_s_.Snapshot(),
          .prompt_tokens = prompt_tokens_.load()};
}

void EngineGroup::Fill(rpc::ArmStats& out) const {
  out.set_name(options_.name);
  out.set_share_percent(options_.share_percent);
  if (auto t = tables(); t != nullptr) out.set_placement_version(t->version);
  if (options_.tables != nullptr) out.set_tables_error(options_.tables->error());
  out.set_received(received_.load());
  out.set_completed(completed_.load());
  out.set_failed(failed_.load());
  out.set_completion_tokens(completion_tokens_.load());
  FillPercentiles(ttft_, out.mutable_ttft_ms());
  FillPercentiles(tpot_, out.mutable_tpot_ms());
  FillPercentiles(e2e_, out.mutable_e2e_ms());
  const double seconds = std::max(1e-9, absl::ToDoubleSeconds(absl::Now() - started_));
  out.set_throughput_rps(completed_.load() / seconds);
  out.set_goodput_rps(within_slo_.load() / seconds);
  const std::vector<RankCounters> ranks = rebatcher_->Ranks();
  int64_t local = 0, remote = 0, bytes = 0, tokens = 0, moe_calls = 0;
  double moe_seconds = 0;
  absl::MutexLock lock(&mu_);
  for (int r = 0; r < size(); ++r) {
    rpc::RankStats* s = out.add_ranks();
    s->set_rank(r);
    s->set_arm(options_.name);
    s->set_address(options_.ranks[r]);
    s->set_usable(ranks[r].load.usable);
    s->set_requests_in_flight(ranks[r].requests_in_flight);
    s->set_tokens_in_flight(ranks[r].load.tokens_in_flight);
    s->set_kv_free_tokens(ranks[r].load.kv_free_tokens);
    s->set_assigned(ranks[r].assigned);
    s->set_lar(rank_lar_[r]);
    const EngineCounters& c = counters_[r];
    s->set_local_activations(c.local);
    s->set_remote_activations(c.remote);
    s->set_a2a_bytes(c.a2a_bytes);
    s->set_tokens(c.tokens);
    s->set_placement_version(c.placement_version);
    *s->mutable_rollout() = c.rollout;
    s->set_down_reason(c.down_reason);
    if (!c.down_reason.empty() && c.down_since != absl::InfinitePast()) {
      s->set_down_for_s(absl::ToDoubleSeconds(absl::Now() - c.down_since));
    }
    if (r == 0) out.set_engines_version(c.placement_version);
    if (c.placement_version != out.engines_version()) out.set_engines_version(0);  // Mid-switch.
    if (c.rollout.target_version() > 0) out.set_rollout_target(c.rollout.target_version());
    local += c.local;
    remote += c.remote;
    bytes += c.a2a_bytes;
    tokens += c.tokens;
    moe_seconds += c.moe_seconds;
    moe_calls += c.moe_calls;
  }
  out.set_moe_layer_ms(moe_calls == 0 ? 0.0 : moe_seconds / moe_calls * 1e3);
  out.set_lar(local + remote == 0 ? 0.0 : static_cast<double>(local) / (local + remote));
  out.set_a2a_bytes_per_token(tokens == 0 ? 0.0 : static_cast<double>(bytes) / tokens);
  // The expert load per MoE layer, over the ranks that reported it (an expert-parallel group).
  std::map<int, std::vector<std::pair<int64_t, int>>> by_layer;  // layer → (served, rank)
  std::map<int, std::vector<int64_t>> per_expert;                // layer → summed over ranks
  absl::Duration span = absl::InfiniteDuration();  // The shortest window of the ranks'.
  for (int r = 0; r < size(); ++r) {
    const EngineCounters& c = counters_[r];
    for (const auto& [layer, served] : c.load.served) by_layer[layer].emplace_back(served, r);
    for (const auto& [layer, experts] : c.load.per_expert) {
      planner::AddActivations(experts, per_expert[layer]);
    }
    if (!c.load.served.empty()) span = std::min(span, c.load_span);
  }
  if (span != absl::InfiniteDuration()) out.set_load_window_s(absl::ToDoubleSeconds(span));
  for (const auto& [layer, ranks] : by_layer) {
    if (ranks.size() < 2) continue;
    std::vector<int64_t> load;
    for (const auto& [served, r] : ranks) load.push_back(served);
    const auto busiest = std::max_element(
        ranks.begin(), ranks.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    rpc::LayerLoad* l = out.add_layer_loads();
    l->set_layer(layer);
    l->set_imbalance(planner::LoadImbalance(load));
    l->set_busiest(busiest->first);
    l->set_busiest_rank(busiest->second);
    l->set_activations(std::accumulate(load.begin(), load.end(), int64_t{0}));
    for (const planner::HotExpert& h : planner::HottestExperts(per_expert[layer], kHotExperts)) {
      rpc::HotExpert* hot = l->add_hot_experts();
      hot->set_expert(h.expert);
      hot->set_activations(h.activations);
    }
  }
}

nlohmann::json EngineGroup::MetricsJson() const {
  rpc::ArmStats s;
  Fill(s);
  return {{"received", s.received()},
          {"completed", s.completed()},
          {"failed", s.failed()},
          {"completion_tokens", s.completion_tokens()},
          {"ttft_ms", PercentilesJson(ttft_)},
          {"tpot_ms", PercentilesJson(tpot_)},
          {"e2e_ms", PercentilesJson(e2e_)},
          {"throughput_rps", s.throughput_rps()},
          {"goodput_rps", s.goodput_rps()},
          {"slo_ttft_ms", options_.slo_ttft_ms},
          {"slo_tpot_ms", options_.slo_tpot_ms},
          {"lar", s.lar()},
          {"a2a_bytes_per_token", s.a2a_bytes_per_token()},
          {"moe_layer_ms", s.moe_layer_ms()},
          {"placement_version", s.placement_version()},
          {"tables_error", s.tables_error()}};
}

void FillPercentiles(const LatencyWindow& w, rpc::Percentiles* p) {
  const PercentileSummary s = w.Summary();
  p->set_count(s.count);
  p->set_p50(s.p50);
  p->set_p90(s.p90);
  p->set_p99(s.p99);
  p->set_mean(s.mean);
}

int ChooseGroup(const std::string& key, const std::vector<int>& share_percents) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  const int bucket = static_cast<int>(h % 100);
  int upto = 0;
  for (size_t g = 0; g < share_percents.size(); ++g) {
    upto += share_percents[g];
    if (bucket < upto) return static_cast<int>(g);
  }
  return static_cast<int>(share_percents.size()) - 1;
}

}  // namespace semmoe::router
