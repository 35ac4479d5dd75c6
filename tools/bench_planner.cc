// bench_planner: solve time of the co-scheduling solvers at production scale, on a generated
// trace with topic structure (requests draw tokens and experts from one of 16 topics).
//
//   bazel run --config=opt //tools:bench_planner -- [--layers=48 --experts=128 --top_k=8
//       --devices=8 --activations=1000000]
#include <chrono>
#include <cstdio>
#include <random>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "planner/eval/evaluate.h"
#include "planner/solver/balance_curve.h"
#include "planner/solver/dp_solver.h"
#include "planner/solver/paper_placement.h"
#include "planner/solver/tp_solver.h"

ABSL_FLAG(int, layers, 48, "MoE layers");
ABSL_FLAG(int, experts, 128, "experts per layer");
ABSL_FLAG(int, top_k, 8, "experts per token");
ABSL_FLAG(int, devices, 8, "devices");
ABSL_FLAG(int64_t, activations, 1000000, "traced activations (tokens × layers × top_k)");
ABSL_FLAG(int, request_tokens, 128, "tokens per request");

namespace semmoe::tools {
namespace {

planner::trace::TraceSet Generate() {
  const int layers = absl::GetFlag(FLAGS_layers), n = absl::GetFlag(FLAGS_experts),
            k = absl::GetFlag(FLAGS_top_k), per_request = absl::GetFlag(FLAGS_request_tokens);
  const int64_t tokens = absl::GetFlag(FLAGS_activations) / (static_cast<int64_t>(layers) * k);
  std::mt19937 rng(1);
  planner::trace::TraceSet t;
  t.header.num_experts = n;
  t.header.top_k = k;
  for (int l = 0; l < layers; ++l) t.header.moe_layers.push_back(l);
  const int topics = 16;
  std::vector<std::vector<std::vector<int>>> topic_experts(topics,
                                                           std::vector<std::vector<int>>(layers));
  for (auto& per_layer : topic_experts) {
    for (auto& experts : per_layer) {
      for (int i = 0; i < 2 * n / topics + k; ++i) experts.push_back(rng() % n);
    }
  }
  for (int64_t done = 0, r = 0; done < tokens; ++r) {
    const int topic = rng() % topics;
    const int count = static_cast<int>(std::min<int64_t>(per_request, tokens - done));
    std::vector<uint32_t> ids;
    std::vector<uint16_t> experts;
    for (int i = 0; i < count; ++i) {
      ids.push_back(topic * 1000 + rng() % 500);
      for (int l = 0; l < layers; ++l) {
        std::vector<int> chosen;
        while (static_cast<int>(chosen.size()) < k) {
          // 80% from the topic's experts, 20% anywhere; k distinct experts.
          const auto& pool = topic_experts[topic][l];
          const int e = rng() % 5 ? pool[rng() % pool.size()] : static_cast<int>(rng() % n);
          if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
        }
        experts.insert(experts.end(), chosen.begin(), chosen.end());
      }
    }
    (void)t.AddRequest("r" + std::to_string(r), ids, experts);
    done += count;
  }
  return t;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

int Main() {
  const int g = absl::GetFlag(FLAGS_devices);
  auto start = std::chrono::steady_clock::now();
  const planner::trace::TraceSet trace = Generate();
  std::printf(
      "trace: %d layers × %u experts, top-%d, %lld tokens in %d requests (%lld activations), "
      "generated in %.1f s\n",
      trace.num_layers(), trace.header.num_experts, trace.top_k(),
      static_cast<long long>(trace.num_tokens()), trace.num_requests(),
      static_cast<long long>(trace.num_tokens() * trace.num_layers() * trace.top_k()),
      Seconds(start));
  start = std::chrono::steady_clock::now();
  auto dp = planner::SolveDp(trace, {.num_devices = g, .seed = 1});
  const double dp_s = Seconds(start);
  if (!dp.ok()) {
    std::fprintf(stderr, "%s\n", dp.status().ToString().c_str());
    return 1;
  }
  std::printf("DP solve (G=%d, 4 starts): %.1f s, in-sample LAR %.3f (bound %.3f, vanilla %.3f)\n",
              g, dp_s, dp->lar, planner::DpRequestBound(trace, g),
              planner::EvaluateDp(
                  trace,
                  *planner::Placement::Vanilla(std::vector<int>(trace.header.moe_layers.begin(),
                                                                trace.header.moe_layers.end()),
                                               trace.header.num_experts, g),
                  planner::RoundRobinRequests(trace, g))
                  ->lar);
  // What `planner build` does by default in DP: the paper's algorithm for one more start, then
  // the balance curve (the solve, and caps validated on clusters left out, balance_curve.h).
  start = std::chrono::steady_clock::now();
  auto paper = planner::SolvePaper(trace, {.num_devices = g, .seed = 1});
  if (!paper.ok()) {
    std::fprintf(stderr, "%s\n", paper.status().ToString().c_str());
    return 1;
  }
  std::printf("paper's algorithm (--algo paper): %.1f s, in-sample LAR %.3f\n", Seconds(start),
              paper->lar);
  start = std::chrono::steady_clock::now();
  auto curve = planner::TraceBalanceCurve(trace, {.num_devices = g, .seed = 1, .paper_start = true},
                                          {.num_devices = g, .seed = 1});
  const double curve_s = Seconds(start);
  if (!curve.ok()) {
    std::fprintf(stderr, "%s\n", curve.status().ToString().c_str());
    return 1;
  }
  const planner::BalancePoint& chosen = curve->points[curve->chosen];
  std::printf(
      "planner build's DP default (the paper's algorithm as a start, then the balance curve), "
      "in all: %.1f s, "
      "chose cap %s: in-sample "
      "LAR %.3f, expert-load imbalance %.3f (unbalanced: %.3f, %.3f)\n",
      curve_s, chosen.eps < 0 ? "off" : std::to_string(chosen.eps).substr(0, 4).c_str(),
      chosen.profile.lar, chosen.profile.expert_load_imbalance,
      curve->points[0].profile.lar, curve->points[0].profile.expert_load_imbalance);
  start = std::chrono::steady_clock::now();
  auto tp = planner::SolveTp(trace, {.num_devices = g, .seed = 1});
  const double tp_s = Seconds(start);
  if (!tp.ok()) {
    std::fprintf(stderr, "%s\n", tp.status().ToString().c_str());
    return 1;
  }
  std::printf("TP solve (G=%d): %.1f s, per-token oracle of the placement %.3f\n", g, tp_s,
              planner::TpTokenOracle(trace, *tp));
  return 0;
}

}  // namespace
}  // namespace semmoe::tools

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return semmoe::tools::Main();
}
