// bench_router: the router's decision cost per request — scoring a prompt against every rank
// (RouterTables::Fit, the planner's prompt rule) and placing a window of queued requests
// (Assigner) — for each policy, on generated tables with topic structure.
//
//   bazel run --config=opt //tools:bench_router -- [--requests=10000 --ranks=8 --vocab=151936
//       --prompt_tokens=256 --window=10000] [--json]
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "nlohmann/json.hpp"
#include "planner/affinity/prompt_scores.h"
#include "planner/placement/topology.h"
#include "planner/sim/cluster_profile.h"
#include "planner/sim/model_shape.h"
#include "planner/sim/step_predictor.h"
#include "router/rebatch/assigner.h"
#include "router/tables/router_tables.h"

ABSL_FLAG(int, requests, 10000, "queued requests");
ABSL_FLAG(int, ranks, 8, "DP ranks");
ABSL_FLAG(int, vocab, 151936, "vocabulary (Qwen3's)");
ABSL_FLAG(int, prompt_tokens, 256, "tokens per prompt");
ABSL_FLAG(int, window, 10000, "requests placed together (the whole queue by default)");
ABSL_FLAG(int, repeats, 5, "timed repetitions (the median is reported)");
ABSL_FLAG(bool, json, false, "also print one JSON line");

namespace semmoe::router {
namespace {

using Clock = std::chrono::steady_clock;

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

template <typename F>
double MedianMicros(int repeats, F run) {
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    run();
    t.push_back(Micros(Clock::now() - start));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int Main() {
  const int n = absl::GetFlag(FLAGS_requests), g = absl::GetFlag(FLAGS_ranks),
            vocab = absl::GetFlag(FLAGS_vocab), len = absl::GetFlag(FLAGS_prompt_tokens),
            window = std::max(1, absl::GetFlag(FLAGS_window)),
            repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  std::mt19937 rng(1);
  // Tables: each token id has most of its mass on one "home" rank (token topic), the rest spread.
  RouterTables tables;
  tables.ranks = g;
  tables.vocab = static_cast<uint32_t>(vocab);
  std::vector<float> dp_scores(static_cast<size_t>(vocab) * g);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int v = 0; v < vocab; ++v) {
    for (int d = 0; d < g; ++d) dp_scores[static_cast<size_t>(v) * g + d] = 0.2f * u(rng);
    dp_scores[static_cast<size_t>(v) * g + (v % g)] += 2.0f;
  }
  tables.log_terms = planner::PromptLogTerms(dp_scores, g);
  // Prompts: each from one topic (80% of its tokens) plus common tokens.
  std::vector<std::vector<int32_t>> prompts(n);
  for (auto& p : prompts) {
    const int topic = static_cast<int>(rng() % g);
    for (int i = 0; i < len; ++i) {
      const int v = static_cast<int>(rng() % (vocab / g)) * g;
      p.push_back(rng() % 5 ? v + topic : static_cast<int>(rng() % vocab));
    }
  }

  std::vector<PendingRequest> pending(n);
  const double fit_us = MedianMicros(repeats, [&] {
    for (int i = 0; i < n; ++i) {
      pending[i].load_tokens = len + 128;
      pending[i].fit = tables.Fit(prompts[i]);
    }
  });
  // The time rule scores a prompt by its shares instead, and predicts with a cluster's model
  // (DeepSeek-V3's shape on H200, the ranks as one node).
  const double share_us = MedianMicros(repeats, [&] {
    for (int i = 0; i < n; ++i) {
      pending[i].prompt_tokens = len;
      pending[i].share = tables.Share(prompts[i]);
    }
  });
  auto predictor = std::make_shared<planner::sim::StepPredictor>(
      *planner::sim::KnownShape("deepseek-v3"), *planner::sim::LoadClusterProfile("h200"),
      *planner::Topology::Flat(g));
  std::printf(
      "bench_router: %d queued requests of %d tokens, %d ranks, vocabulary %d, windows "
      "of %d; median of %d\n",
      n, len, g, vocab, window, repeats);
  std::printf("%-14s %14s %16s %16s\n", "policy", "score us/req", "place us/req", "total us/req");
  nlohmann::json rows = nlohmann::json::array();
  for (Policy policy :
       {Policy::kSemantic, Policy::kLeastLoaded, Policy::kRoundRobin, Policy::kTime}) {
    const double place_us = MedianMicros(repeats, [&] {
      Assigner assigner(policy, 0.05, {}, predictor);
      std::vector<RankLoad> loads(g);
      for (int start = 0; start < n; start += window) {
        const int end = std::min(n, start + window);
        std::vector<PendingRequest> w(pending.begin() + start, pending.begin() + end);
        (void)assigner.Assign(w, loads);
      }
    });
    const double score = policy == Policy::kSemantic ? fit_us / n
                         : policy == Policy::kTime   ? share_us / n
                                                     : 0.0;
    std::printf("%-14s %14.3f %16.3f %16.3f\n", PolicyName(policy), score, place_us / n,
                score + place_us / n);
    rows.push_back({{"policy", PolicyName(policy)},
                    {"score_us_per_request", score},
                    {"place_us_per_request", place_us / n},
                    {"total_us_per_request", score + place_us / n}});
  }
  // How often the semantic choice is the prompt's topic rank (a sanity check on the tables).
  Assigner assigner(Policy::kSemantic, 0.05);
  std::vector<RankLoad> loads(g);
  const std::vector<int> placed = assigner.Assign(pending, loads);
  int64_t busiest = 0, total = 0;
  for (const RankLoad& l : loads) {
    busiest = std::max(busiest, l.tokens_in_flight);
    total += l.tokens_in_flight;
  }
  std::printf("semantic placement of the whole queue: load max/mean %.3f\n",
              static_cast<double>(busiest) * g / std::max<int64_t>(1, total));
  if (absl::GetFlag(FLAGS_json)) std::cout << rows.dump() << "\n";
  return placed.size() == pending.size() ? 0 : 1;
}

}  // namespace
}  // namespace semmoe::router

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return semmoe::router::Main();
}
