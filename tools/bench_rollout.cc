// bench_rollout: a live placement rollout (engine/parallel/placement_rollout.h) on a serving
// group, measured side by side in one run.
//
// A 2-rank Attention-DP group (threads, each with its own Gloo communicator over loopback)
// serves a closed loop of greedy requests. It is rolled from vanilla to placements that swap
// `m` experts per MoE layer between the ranks, and back, for each m of --moved. Per rollout:
// for each loading cap of --caps: the time from the proposal to the switch, the switch's own time,
// the experts and bytes loaded per rank, the peak of staged bytes against the moved experts' bytes,
// the process's peak RSS growth, and the serving stall: the largest gap between two tokens of one
// request during the rollout against the median gap before it (a gap is one decode step of that
// request). Then what sampling every request's routing (RoutingSampler) costs serving, in
// alternating rounds with the samplers paused and on; and the two sources for a gained expert,
// side by side: the rank's checkpoint (mmap'd safetensors, BF16 → f32 + the BF16 copy) and its
// peer over a Gloo pair (the same bytes).
//
//   bazel run -c opt //tools:bench_rollout -- [--model DIR] [--moved 2,4,8] [--caps 0,100]
//       [--json]
// Without --model it writes a synthetic qwen3_moe (hidden 512, 32 experts × 4 layers,
// experts of 256) to a temporary folder.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/proc_status.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/model/weights.h"
#include "engine/parallel/gloo_communicator.h"
#include "engine/parallel/group_engine.h"
#include "engine/parallel/placement_rollout.h"
#include "engine/parallel/routing_sampler.h"
#include "engine/text/config.h"
#include "glog/logging.h"
#include "gloo/rendezvous/hash_store.h"
#include "kernels/safetensors.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, model, "", "Model directory; empty: a synthetic one.");
ABSL_FLAG(std::vector<std::string>, moved, std::vector<std::string>({"2", "4", "8"}),
          "Experts per MoE layer each rank swaps with the other, one rollout (and back) each.");
ABSL_FLAG(int, concurrency, 4, "Requests in flight per rank.");
ABSL_FLAG(int, max_tokens, 48, "Tokens per request.");
ABSL_FLAG(double, baseline_s, 2.0, "Seconds of serving measured before each rollout.");
ABSL_FLAG(std::vector<std::string>, caps, std::vector<std::string>({"0", "100"}),
          "PlacementRollout's loading caps (MB/s per rank; 0: none), each run with every --moved.");
ABSL_FLAG(bool, json, false, "End with one JSON line holding the rows.");
ABSL_FLAG(int, sampling_rounds, 3, "Rounds of serving with routing sampling paused / on.");

#define MUST(expr)                   \
  do {                               \
    const absl::Status must_ = expr; \
    CHECK(must_.ok()) << must_;      \
  } while (false)

namespace semmoe::tools {
namespace {

using engine::Communicator;
using engine::GroupEngine;
using engine::PlacementRollout;
using engine::RankModel;
using engine::RankPlacement;

constexpr int kRanks = 2;

// Anonymous resident memory (the weights; not the checkpoint's mapped pages, which the kernel
// may drop), from /proc/self/status.
int64_t RssBytes() { return std::max<int64_t>(0, semmoe::ProcStatusBytes("RssAnon")); }

// Vanilla with the first `m` experts of each rank's block swapped with the other's, per layer.
planner::Placement Swapped(const planner::Placement& vanilla, int m) {
  std::vector<std::vector<int32_t>> device_of;
  const int n = vanilla.num_experts(), half = n / kRanks;
  for (int l = 0; l < vanilla.num_layers(); ++l) {
    std::vector<int32_t> d(n);
    for (int e = 0; e < n; ++e) d[e] = vanilla.Device(l, e);
    for (int i = 0; i < m; ++i) std::swap(d[i], d[half + i]);
    device_of.push_back(d);
  }
  return *planner::Placement::FromAssignment(vanilla.moe_layers(), n, kRanks, device_of);
}

// Token arrival times per request; the gaps between them are decode steps.
class Gaps : public engine::RequestSink {
 public:
  Gaps(absl::Mutex* mu, std::vector<std::pair<absl::Time, double>>* gaps, absl::Notification* done)
      : mu_(mu), gaps_(gaps), done_(done) {}
  void OnToken(int32_t, absl::string_view) override {
    const absl::Time now = absl::Now();
    if (last_ != absl::InfinitePast()) {
      absl::MutexLock lock(mu_);
      gaps_->push_back({now, absl::ToDoubleMilliseconds(now - last_)});
    }
    last_ = now;
  }
  void OnDone(const engine::runtime::GenerationResult&) override { done_->Notify(); }
  void OnError(const absl::Status& s) override {
    LOG(ERROR) << "request failed: " << s;
    failed.store(true);
    done_->Notify();
  }
  static inline std::atomic<bool> failed{false};

 private:
  absl::Mutex* mu_;
  std::vector<std::pair<absl::Time, double>>* gaps_;
  absl::Notification* done_;
  absl::Time last_ = absl::InfinitePast();
};

struct Rank {
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<RankModel> model;
  std::unique_ptr<PlacementRollout> rollout;
  std::unique_ptr<engine::RoutingSampler> sampler;
  std::unique_ptr<GroupEngine> engine;
};

std::string Mb(int64_t bytes) { return absl::StrFormat("%.1f", bytes / 1e6); }

int Main() {
  std::string dir = absl::GetFlag(FLAGS_model);
  if (dir.empty()) {
    dir = absl::StrCat("/tmp/bench_rollout_model_", getpid());
    semmoe::testing::TinyModelOptions o;
    o.hidden_size = 512;
    o.num_layers = 4;
    o.num_heads = 8;
    o.num_kv_heads = 4;
    o.head_dim = 64;
    o.num_experts = 32;
    o.top_k = 4;
    o.moe_intermediate_size = 256;
    o.seed = 1;
    MUST(semmoe::testing::WriteTinyModel(o, dir));
  }
  auto config = engine::model::LoadModelConfig(dir);
  MUST(config.status());
  auto vanilla = planner::Placement::Vanilla(config->MoeLayers(), config->num_experts, kRanks);
  MUST(vanilla.status());
  // Versions: 1 vanilla, 1 + m the placement swapping m experts per layer.
  auto build = [&](int64_t v) -> absl::StatusOr<std::unique_ptr<RankPlacement>> {
    const planner::Placement p = v == 1 ? *vanilla : Swapped(*vanilla, static_cast<int>(v - 1));
    return engine::BuildRankPlacement(
        {.version = v, .placement_json = p.ToJson(), .placement_name = absl::StrCat("v", v)},
        *config, kRanks);
  };

  gloo::rendezvous::HashStore store;
  std::vector<Rank> ranks(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      auto comm =
          engine::GlooCommunicator::Create(store, {.rank = r, .size = kRanks, .prefix = "b"});
      MUST(comm.status());
      ranks[r].comm = std::move(*comm);
      auto model = RankModel::Create(dir, *build(1), *ranks[r].comm, {});
      MUST(model.status());
      ranks[r].model = std::move(*model);
      ranks[r].rollout = std::make_unique<PlacementRollout>(*ranks[r].model, build);
      auto sampler = engine::RoutingSampler::Create(
          *config, {.share = 1,
                    .path = absl::StrCat("/tmp/bench_rollout_live_", getpid(), "_", r, ".trace"),
                    .flush_interval = absl::Seconds(2)});
      MUST(sampler.status());
      ranks[r].sampler = std::move(*sampler);
      ranks[r].sampler->set_paused(true);
      auto engine = GroupEngine::Create(
          *ranks[r].model,
          {.rollout = ranks[r].rollout.get(), .routing_sampler = ranks[r].sampler.get()});
      MUST(engine.status());
      ranks[r].engine = std::move(*engine);
    });
  }
  for (auto& t : threads) t.join();
  for (Rank& r : ranks) r.engine->Start();

  // The closed loop: `concurrency` requests per rank, each resubmitted when done.
  absl::Mutex mu;
  std::vector<std::pair<absl::Time, double>> gaps;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int r = 0; r < kRanks; ++r) {
    for (int c = 0; c < absl::GetFlag(FLAGS_concurrency); ++c) {
      clients.emplace_back([&, r, c] {
        for (int n = 0; !stop.load(); ++n) {
          absl::Notification done;
          std::vector<int32_t> prompt;
          for (int i = 0; i < 16; ++i) prompt.push_back((i * 37 + n * 11 + c * 101 + r) % 200);
          auto sink = std::make_shared<Gaps>(&mu, &gaps, &done);
          MUST(ranks[r].engine->Submit({.id = absl::StrCat("r", r, "c", c, "n", n),
                                        .prompt = prompt,
                                        .max_tokens = absl::GetFlag(FLAGS_max_tokens),
                                        .ignore_eos = true},
                                       sink));
          done.WaitForNotification();
        }
      });
    }
  }
  std::atomic<int64_t> peak_rss{0};
  std::thread sampler([&] {
    while (!stop.load()) {
      int64_t now = RssBytes(), seen = peak_rss.load();
      while (now > seen && !peak_rss.compare_exchange_weak(seen, now)) {
      }
      absl::SleepFor(absl::Milliseconds(2));
    }
  });

  std::printf("bench_rollout: %s, %d ranks (Attention-DP), %d requests in flight per rank\n",
              dir.c_str(), kRanks, absl::GetFlag(FLAGS_concurrency));
  std::printf("%-5s %-8s %6s %7s %9s %9s %10s %9s %9s %10s %9s %7s %10s %8s %6s\n", "cap",
              "rollout", "moved", "time_s", "switch_ms", "loaded_MB", "peak_stage", "anon_rss+",
              "median_ms", "max_before", "max_ms", "ratio", "p99_before", "p99_ms", "steps");
  nlohmann::json rows = nlohmann::json::array();
  absl::SleepFor(absl::Seconds(1));  // Warm up.
  double cap = 0;
  auto measure = [&](int64_t to, const std::string& name) {
    {
      absl::MutexLock lock(&mu);
      gaps.clear();
    }
    absl::SleepFor(absl::Seconds(absl::GetFlag(FLAGS_baseline_s)));
    const absl::Time t0 = absl::Now();
    peak_rss = RssBytes();
    const int64_t rss0 = peak_rss.load();
    ranks[0].rollout->Propose(to);
    for (;;) {
      bool all = true;
      for (Rank& r : ranks) all &= r.rollout->stats().serving_version == to;
      if (all) break;
      absl::SleepFor(absl::Microseconds(200));
    }
    const absl::Time t1 = absl::Now();
    absl::SleepFor(absl::Milliseconds(300));  // Steps just after the switch count too.
    std::vector<double> before, during;
    {
      absl::MutexLock lock(&mu);
      for (const auto& [at, ms] : gaps) (at < t0 ? before : during).push_back(ms);
    }
    std::vector<double> sorted = before, sorted_during = during;
    std::sort(sorted.begin(), sorted.end());
    std::sort(sorted_during.begin(), sorted_during.end());
    const double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
    auto p99 = [](const std::vector<double>& v) { return v.empty() ? 0 : v[v.size() * 99 / 100]; };
    const double worst = during.empty() ? 0 : *std::max_element(during.begin(), during.end());
    // The same number of steps just before the rollout: what serving's own jitter gives.
    const double worst_before = before.size() < during.size()
                                    ? 0
                                    : *std::max_element(before.end() - during.size(), before.end());
    const engine::RolloutStats s = ranks[0].rollout->stats();
    int64_t loaded = 0, peak = 0;
    for (Rank& r : ranks) {
      loaded += r.rollout->stats().last_bytes_loaded;
      peak += r.rollout->stats().peak_staged_bytes;
    }
    const double seconds = absl::ToDoubleSeconds(t1 - t0);
    std::printf(
        "%-5.0f %-8s %6lld %7.3f %9.3f %9s %10s %9s %9.2f %10.2f %9.2f %7.2f %10.2f %8.2f %6zu\n",
        cap, name.c_str(), static_cast<long long>(s.last_experts_loaded), seconds, s.last_switch_ms,
        Mb(loaded).c_str(), Mb(peak).c_str(), Mb(peak_rss.load() - rss0).c_str(), median,
        worst_before, worst, median > 0 ? worst / median : 0.0, p99(sorted), p99(sorted_during),
        during.size());
    rows.push_back({{"cap_mb_per_s", cap},
                    {"rollout", name},
                    {"experts_moved_per_rank", s.last_experts_loaded},
                    {"seconds", seconds},
                    {"switch_ms", s.last_switch_ms},
                    {"bytes_loaded", loaded},
                    {"peak_staged_bytes", peak},
                    {"peak_rss_growth_bytes", peak_rss.load() - rss0},
                    {"median_step_ms", median},
                    {"max_step_ms", worst},
                    {"max_step_before_ms", worst_before},
                    {"p99_step_before_ms", p99(sorted)},
                    {"p99_step_ms", p99(sorted_during)},
                    {"stall_ratio", median > 0 ? worst / median : 0.0}});
    for (Rank& r : ranks) {  // Peak staged resets per rollout; RankModel frees the lost ones.
      CHECK_EQ(r.rollout->stats().serving_version, to);
    }
  };
  for (const std::string& c : absl::GetFlag(FLAGS_caps)) {
    cap = std::stod(c);
    for (Rank& r : ranks) r.rollout->set_load_mb_per_s(cap);
    for (const std::string& m : absl::GetFlag(FLAGS_moved)) {
      const int64_t v = 1 + std::stoi(m);
      measure(v, absl::StrCat("1->", v));
      measure(1, absl::StrCat(v, "->1"));
    }
  }
  // What sampling every request's routing (engine serve --sample_routing 1) costs serving: rounds
  // of the same closed loop with the samplers paused and on, alternating.
  std::printf("\nrouting sampling (every request, flushed every 2 s), %d rounds of %.1f s each:\n",
              absl::GetFlag(FLAGS_sampling_rounds), absl::GetFlag(FLAGS_baseline_s));
  std::printf("%-8s %10s %10s %12s\n", "sampling", "median_ms", "p99_ms", "tokens/s");
  nlohmann::json sampling = nlohmann::json::array();
  for (int round = 0; round < absl::GetFlag(FLAGS_sampling_rounds); ++round) {
    for (bool on : {false, true}) {
      for (Rank& r : ranks) r.sampler->set_paused(!on);
      {
        absl::MutexLock lock(&mu);
        gaps.clear();
      }
      absl::SleepFor(absl::Seconds(absl::GetFlag(FLAGS_baseline_s)));
      std::vector<double> v;
      {
        absl::MutexLock lock(&mu);
        for (const auto& g : gaps) v.push_back(g.second);
      }
      std::sort(v.begin(), v.end());
      const double median = v.empty() ? 0 : v[v.size() / 2];
      const double p99 = v.empty() ? 0 : v[v.size() * 99 / 100];
      const double rate = v.size() / absl::GetFlag(FLAGS_baseline_s);
      std::printf("%-8s %10.2f %10.2f %12.1f\n", on ? "on" : "paused", median, p99, rate);
      sampling.push_back({{"sampling", on},
                          {"median_step_ms", median},
                          {"p99_step_ms", p99},
                          {"tokens_per_s", rate}});
    }
  }
  int64_t sampled = 0;
  for (Rank& r : ranks) sampled += r.sampler->stats().requests;
  std::printf(
      "(%lld requests sampled; median/p99: gaps between a request's tokens; tokens/s: "
      "over both ranks)\n",
      static_cast<long long>(sampled));
  stop = true;
  for (auto& t : clients) t.join();
  sampler.join();
  ranks[0].engine->RequestStop();
  for (Rank& r : ranks) MUST(r.engine->Wait());
  for (Rank& r : ranks) {  // Its last flush, then its file goes.
    const std::string trace = r.sampler->stats().path;
    r.engine.reset();
    r.sampler.reset();
    std::filesystem::remove(trace);
  }
  if (Gaps::failed.load()) {
    std::fprintf(stderr, "bench_rollout: a request failed\n");
    return 1;
  }
  std::printf(
      "(cap: the loading cap, MB/s per rank (0: none); moved: experts each rank gained; loaded_MB, "
      "peak_stage: over both ranks; "
      "anon_rss+: the process's peak anonymous resident growth during the rollout; "
      "median_ms: a request's median gap between tokens (a decode step) before it; "
      "max_before: the largest of as many steps just before; max_ms: the largest during "
      "it (to 300 ms after the switch); ratio: max_ms / median_ms; p99: of the steps before "
      "and during)\n");

  // The two sources of a gained expert, for the same experts.
  auto checkpoint = kernels::Checkpoint::Open(dir);
  MUST(checkpoint.status());
  const int layer = config->MoeLayers()[0], count = std::min(16, config->num_experts);
  std::vector<engine::model::MlpWeights> experts;
  absl::Time start = absl::Now();
  int64_t bytes = 0;
  for (int e = 0; e < count; ++e) {
    auto w = engine::model::LoadExpert(*config, **checkpoint, layer, e);
    MUST(w.status());
    bytes += engine::model::WeightBytes(*w);
    experts.push_back(*std::move(w));
  }
  const double disk_s = absl::ToDoubleSeconds(absl::Now() - start);
  // Peer: the BF16 bits (what a peer would send; the receiver widens them) over a Gloo pair.
  std::vector<char> wire;
  for (const auto& w : experts) {
    for (const auto* l : {&w.gate, &w.up, &w.down}) {
      const char* p = reinterpret_cast<const char*>(
          l->bf16.empty() ? static_cast<const void*>(l->w.data()) : l->bf16.data());
      wire.insert(wire.end(), p, p + (l->bf16.empty() ? l->w.size() * 4 : l->bf16.size() * 2));
    }
  }
  gloo::rendezvous::HashStore pair_store;
  double peer_s = 0;
  std::vector<std::thread> pair;
  for (int r = 0; r < kRanks; ++r) {
    pair.emplace_back([&, r] {
      auto comm =
          *engine::GlooCommunicator::Create(pair_store, {.rank = r, .size = 2, .prefix = "p"});
      std::vector<char> buffer = r == 0 ? wire : std::vector<char>(wire.size());
      MUST(comm->Barrier());
      const absl::Time t = absl::Now();
      MUST(comm->Broadcast(absl::MakeSpan(buffer), 0));
      if (r == 1) {  // Widen like the checkpoint path does.
        std::vector<float> widened(buffer.size() / 2);
        const auto* bits = reinterpret_cast<const uint16_t*>(buffer.data());
        for (size_t i = 0; i < widened.size(); ++i) {
          const uint32_t u = static_cast<uint32_t>(bits[i]) << 16;
          std::memcpy(&widened[i], &u, 4);
        }
        peer_s = absl::ToDoubleSeconds(absl::Now() - t);
      }
    });
  }
  for (auto& t : pair) t.join();
  std::printf("\nsource of %d gained experts (%s MB in memory, %s MB on the wire):\n", count,
              Mb(bytes).c_str(), Mb(static_cast<int64_t>(wire.size())).c_str());
  std::printf("  checkpoint  %8.2f ms  (%7.1f MB/s of weights)\n", disk_s * 1e3,
              bytes / 1e6 / disk_s);
  std::printf("  peer (Gloo) %8.2f ms  (%7.1f MB/s of weights)  checkpoint/peer time %.2f\n",
              peer_s * 1e3, bytes / 1e6 / peer_s, disk_s / peer_s);
  if (absl::GetFlag(FLAGS_json)) {
    std::printf("%s\n", nlohmann::json({{"rows", rows},
                                        {"sampling", sampling},
                                        {"checkpoint_ms", disk_s * 1e3},
                                        {"peer_ms", peer_s * 1e3},
                                        {"expert_bytes", bytes}})
                            .dump()
                            .c_str());
  }
  if (absl::GetFlag(FLAGS_model).empty()) std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace semmoe::tools

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return semmoe::tools::Main();
}
