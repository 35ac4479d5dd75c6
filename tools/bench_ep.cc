// bench_ep: expert-parallel execution, vanilla vs a semantic placement, side by side in one run.
//
// The prompts are split in two: the even ones are profiled on one device (a routing trace), and
// from it come the affinity tables and — by default — the semantic placements (the planner's DP
// and TP solvers); the odd ones (held out) are then run for real on G ranks (threads, each with
// its own Gloo communicator over loopback, its own experts and KV cache): prefill plus a few
// greedy decode steps, for every G, in Attention-DP (vanilla: round-robin requests; semantic:
// the router's affinity rule), Attention-TP plain and Attention-TP shuffled (predicting devices
// by token id only, "tp_shuffled_T", and by token id and the previous layers, "tp_shuffled").
// Printed per row: LAR, the expert load's balance (per MoE layer, the busiest rank's expert
// activations over the mean, "max/mean", averaged over layers), all-to-all payload bytes per
// token (dispatch + combine, f32 rows), RS+AG bytes per token, and wall time per MoE layer call
// (dispatch / experts / combine, the slowest rank). With --replicas, the replicated semantic
// placement runs with the per-batch holder choice ("+choice", planner/placement/holder_choice.h)
// and without it (an expert a rank lacks on its home, "+home"), and EPLB with as many replicas
// (planner/solver/baselines.h, round-robin requests, with the choice) is a contender.
//
//   bazel run -c opt //tools:bench_ep -- --model DIR --prompts FILE [--ranks G]
//       [--placement semantic|FILE] [--json]
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/status_macros.h"
#include "engine/forward/cpu_forward.h"
#include "engine/model/model.h"
#include "engine/offline/jsonl.h"
#include "engine/parallel/gloo_communicator.h"
#include "engine/parallel/lockstep_greedy.h"
#include "engine/parallel/rank_model.h"
#include "engine/parallel/tp_weights.h"
#include "engine/runtime/kv_cache.h"
#include "engine/text/config.h"
#include "gloo/rendezvous/hash_store.h"
#include "nlohmann/json.hpp"
#include "planner/affinity/layer_affinity.h"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/eval/schedule.h"
#include "planner/solver/baselines.h"
#include "planner/solver/dp_solver.h"
#include "planner/solver/replicas.h"
#include "planner/solver/tp_solver.h"

ABSL_FLAG(std::string, model, "", "Model directory (Hugging Face layout).");
ABSL_FLAG(std::string, prompts, "", "JSONL prompts: objects with \"text\" or \"token_ids\".");
ABSL_FLAG(int, ranks, 0, "Group size; 0 runs 2, 4 and 8 (those the model allows).");
ABSL_FLAG(std::string, placement, "semantic",
          "semantic (solved from the profile half) or a placement JSON file.");
ABSL_FLAG(int, num_prompts, 64, "Prompts read (half profiled, half run).");
ABSL_FLAG(double, expert_balance_eps, -1,
          "The semantic DP placement's expert-load cap: per device ≤ (1 + eps) · mean on the "
          "profile (planner build --expert_balance_eps; negative: none)");
ABSL_FLAG(int, max_prompt_tokens, 64, "Prompts are cut to this many tokens.");
ABSL_FLAG(int, decode_steps, 4, "Greedy decode steps after each prefill.");
ABSL_FLAG(uint64_t, seed, 0, "Solver seed.");
ABSL_FLAG(int, replicas, 0,
          "Also run the semantic placements with R replicated hot experts "
          "per device (planner/solver/replicas.h).");
ABSL_FLAG(bool, json, false, "End with one JSON line holding the table.");

namespace semmoe {
namespace {

using engine::AttentionMode;
using engine::MoeLayerCounters;
using planner::Placement;

struct Row {
  int ranks = 0;
  std::string mode, placement;
  double lar = 0, load_max_mean = 0, a2a_bytes_per_token = 0, rsag_bytes_per_token = 0;
  double dispatch_ms = 0, expert_ms = 0, combine_ms = 0, wall_s = 0;
};

absl::StatusOr<std::vector<std::vector<int32_t>>> ReadPrompts(const std::string& path,
                                                              const engine::model::Model& m) {
  ASSIGN_OR_RETURN(auto reader, engine::offline::JsonlReader::Open(path));
  std::vector<std::vector<int32_t>> prompts;
  nlohmann::json line;
  while (static_cast<int>(prompts.size()) < absl::GetFlag(FLAGS_num_prompts)) {
    ASSIGN_OR_RETURN(bool more, reader->Next(line));
    if (!more) break;
    std::vector<int32_t> ids;
    if (line.contains("token_ids")) {
      ASSIGN_OR_RETURN(ids,
                       engine::offline::ReadTokenIds(line, m.config.vocab_size, reader->where()));
    } else if (line.contains("text") && line["text"].is_string()) {
      if (m.tokenizer == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(reader->where(), ": text prompts need the model's tokenizer.json"));
      }
      ASSIGN_OR_RETURN(ids, m.tokenizer->Encode(line["text"].get<std::string>()));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(reader->where(), ": expected \"text\" or \"token_ids\""));
    }
    if (ids.size() > static_cast<size_t>(absl::GetFlag(FLAGS_max_prompt_tokens))) {
      ids.resize(absl::GetFlag(FLAGS_max_prompt_tokens));
    }
    if (!ids.empty()) prompts.push_back(std::move(ids));
  }
  if (prompts.size() < 4) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": need at least 4 prompts"));
  }
  return prompts;
}

// The routing of `prompts` on one device, as a trace.
absl::StatusOr<planner::trace::TraceSet> Profile(const engine::model::Model& m,
                                                 const std::vector<std::vector<int32_t>>& prompts) {
  const auto& c = m.config;
  planner::trace::TraceSet trace;
  trace.header = {.num_experts = static_cast<uint32_t>(c.num_experts),
                  .vocab_size = static_cast<uint32_t>(c.vocab_size),
                  .top_k = static_cast<uint16_t>(c.top_k)};
  for (int l : c.MoeLayers()) trace.header.moe_layers.push_back(static_cast<uint16_t>(l));
  const int layers = static_cast<int>(c.MoeLayers().size()), k = c.top_k;
  // One device: the CPU forward with every expert, its arena of the lender's pages.
  constexpr int kPages = 512, kPageSize = 16;
  ASSIGN_OR_RETURN(auto pages, engine::runtime::PagedKvCache::Create({.num_layers = c.num_layers,
                                                                      .shape = c.kv_shape(),
                                                                      .page_size = kPageSize,
                                                                      .num_pages = kPages}));
  ASSIGN_OR_RETURN(auto one, engine::forward::CpuForward::Create(
                                 c, *m.weights, {.num_pages = kPages, .page_size = kPageSize}));
  const auto forward = [&](absl::Span<const engine::model::SequenceInput> b,
                           const engine::model::ForwardOptions& o) { return one->Forward(b, o); };
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<std::vector<engine::model::Routing>> routing;
    RETURN_IF_ERROR(
        engine::RunLockstepGreedy(forward, *pages, {prompts[i]}, {.routing = &routing}).status());
    std::vector<uint16_t> experts;
    for (size_t t = 0; t < prompts[i].size(); ++t) {
      for (int l = 0; l < layers; ++l) {
        for (int j = 0; j < k; ++j) experts.push_back(routing[0][l].expert_ids[t * k + j]);
      }
    }
    std::vector<uint32_t> tokens(prompts[i].begin(), prompts[i].end());
    RETURN_IF_ERROR(trace.AddRequest(absl::StrCat("p", i), tokens, experts));
  }
  return trace;
}

// One configuration on G threads.
absl::StatusOr<Row> RunConfig(const std::string& dir,
                              const std::vector<std::vector<int32_t>>& prompts,
                              const Placement& placement, AttentionMode attention,
                              const engine::DevicePredictor* predictor,
                              const std::vector<int>& request_rank, bool holder_choice = true) {
  const int g = placement.num_devices();
  gloo::rendezvous::HashStore store;
  std::vector<absl::Status> status(g);
  std::vector<std::vector<MoeLayerCounters>> counters(g);
  std::vector<engine::CommCounters> comm_counters(g);
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int r = 0; r < g; ++r) {
    threads.emplace_back([&, r] {
      status[r] = [&]() -> absl::Status {
        ASSIGN_OR_RETURN(auto comm, engine::GlooCommunicator::Create(
                                        store, {.rank = r, .size = g, .prefix = "bench"}));
        std::vector<std::vector<int32_t>> mine;
        for (size_t i = 0; i < prompts.size(); ++i) {
          if (attention == AttentionMode::kTp || request_rank[i] == r) mine.push_back(prompts[i]);
        }
        // The CPU forward's KV arena: this rank's prompts and decode steps, a page of slack each
        // (the whole model's rows per position: at least a TP rank's).
        ASSIGN_OR_RETURN(const engine::model::ModelConfig config,
                         engine::model::LoadModelConfig(dir));
        int64_t positions = 0;
        for (const auto& p : mine) {
          positions += static_cast<int64_t>(p.size()) + absl::GetFlag(FLAGS_decode_steps) + 16;
        }
        const int64_t kv_bytes = std::max<int64_t>(positions, 16) * config.num_layers *
                                 config.kv_shape().floats() * int64_t{sizeof(float)};
        ASSIGN_OR_RETURN(auto model, engine::RankModel::Create(dir, placement, *comm,
                                                               {.attention = attention,
                                                                .predictor = predictor,
                                                                .holder_choice = holder_choice,
                                                                .kv_cache_bytes = kv_bytes}));
        ASSIGN_OR_RETURN(auto pages, model->NewPageCache());
        engine::forward::CpuForward& cpu = *model->cpu_forward();
        RETURN_IF_ERROR(
            engine::RunLockstepGreedy(
                [&](absl::Span<const engine::model::SequenceInput> b,
                    const engine::model::ForwardOptions& o) { return cpu.Forward(b, o); },
                *pages, mine, {.decode_steps = absl::GetFlag(FLAGS_decode_steps)})
                .status());
        counters[r] = cpu.ep_counters();
        comm_counters[r] = comm->counters();
        return absl::OkStatus();
      }();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : status) RETURN_IF_ERROR(s);

  Row row;
  row.ranks = g;
  row.wall_s = absl::ToDoubleSeconds(absl::Now() - start);
  int64_t local = 0, remote = 0, a2a = 0, tokens = 0, rsag = 0;
  const int64_t calls =
      static_cast<int64_t>(absl::GetFlag(FLAGS_decode_steps) + 1) * placement.num_layers();
  for (int r = 0; r < g; ++r) {
    double dispatch = 0, experts = 0, combine = 0;
    for (const MoeLayerCounters& m : counters[r]) {
      local += m.local_activations;
      remote += m.remote_activations;
      a2a += m.dispatch_bytes_sent + m.combine_bytes_sent;
      dispatch += m.dispatch_seconds;
      experts += m.expert_seconds;
      combine += m.combine_seconds;
    }
    tokens += counters[r][0].tokens;
    rsag += comm_counters[r][engine::CollectiveKind::kReduceScatter].bytes_sent +
            comm_counters[r][engine::CollectiveKind::kAllGather].bytes_sent;
    row.dispatch_ms = std::max(row.dispatch_ms, 1e3 * dispatch / calls);
    row.expert_ms = std::max(row.expert_ms, 1e3 * experts / calls);
    row.combine_ms = std::max(row.combine_ms, 1e3 * combine / calls);
  }
  // Per MoE layer, the busiest rank's expert activations over the mean; averaged over layers.
  const size_t layers = counters[0].size();
  for (size_t l = 0; l < layers; ++l) {
    int64_t max = 0, sum = 0;
    for (int r = 0; r < g; ++r) {
      max = std::max(max, counters[r][l].served_activations);
      sum += counters[r][l].served_activations;
    }
    row.load_max_mean += sum == 0 ? 1.0 : static_cast<double>(max) * g / static_cast<double>(sum);
  }
  row.load_max_mean /= std::max<size_t>(1, layers);
  row.lar = static_cast<double>(local) / std::max<int64_t>(1, local + remote);
  row.a2a_bytes_per_token = static_cast<double>(a2a) / std::max<int64_t>(1, tokens);
  row.rsag_bytes_per_token = static_cast<double>(rsag) / std::max<int64_t>(1, tokens);
  return row;
}

// `bazel run` starts binaries in the runfiles tree: resolve relative paths against the caller's.
absl::Status Main() {
  const std::string dir = UserPath(absl::GetFlag(FLAGS_model));
  if (dir.empty() || absl::GetFlag(FLAGS_prompts).empty()) {
    return absl::InvalidArgumentError("--model and --prompts are required");
  }
  ASSIGN_OR_RETURN(auto m, engine::model::LoadModel(dir));
  const auto& config = m->config;
  ASSIGN_OR_RETURN(auto prompts, ReadPrompts(UserPath(absl::GetFlag(FLAGS_prompts)), *m));
  std::vector<std::vector<int32_t>> profile, heldout;
  for (size_t i = 0; i < prompts.size(); ++i)
    (i % 2 == 0 ? profile : heldout).push_back(prompts[i]);
  std::fprintf(stderr, "profiling %zu prompts on one device...\n", profile.size());
  ASSIGN_OR_RETURN(auto trace, Profile(*m, profile));
  const auto affinity = planner::BuildTokenAffinity(trace);
  std::vector<std::vector<uint32_t>> heldout_ids;
  int64_t heldout_tokens = 0;
  for (const auto& p : heldout) {
    heldout_ids.emplace_back(p.begin(), p.end());
    heldout_tokens += static_cast<int64_t>(p.size());
  }

  std::unique_ptr<Placement> file_placement;
  const std::string placement_flag = absl::GetFlag(FLAGS_placement);
  if (placement_flag != "semantic") {
    ASSIGN_OR_RETURN(std::string text, ReadFile(UserPath(placement_flag)));
    ASSIGN_OR_RETURN(Placement p, Placement::FromJson(text));
    file_placement = std::make_unique<Placement>(std::move(p));
  }
  std::vector<int> sizes = {2, 4, 8};
  if (absl::GetFlag(FLAGS_ranks) > 0) sizes = {absl::GetFlag(FLAGS_ranks)};
  if (file_placement != nullptr) sizes = {file_placement->num_devices()};

  std::vector<Row> rows;
  for (int g : sizes) {
    if (config.num_experts % g != 0) continue;
    const bool tp_ok = engine::CheckTpSplit(config, g).ok();
    ASSIGN_OR_RETURN(Placement vanilla,
                     Placement::Vanilla(config.MoeLayers(), config.num_experts, g));
    std::fprintf(stderr, "G = %d: solving placements...\n", g);
    planner::DpSolverOptions solver;
    solver.num_devices = g;
    solver.seed = absl::GetFlag(FLAGS_seed);
    solver.expert_balance_eps = absl::GetFlag(FLAGS_expert_balance_eps);
    std::unique_ptr<Placement> dp_placement, tp_placement;
    if (file_placement != nullptr) {
      dp_placement = std::make_unique<Placement>(*file_placement);
      tp_placement = std::make_unique<Placement>(*file_placement);
    } else {
      ASSIGN_OR_RETURN(planner::DpSolution dp, planner::SolveDp(trace, solver));
      dp_placement = std::make_unique<Placement>(dp.placement);
      planner::DpSolverOptions tp_solver = solver;
      tp_solver.expert_balance_eps = -1;  // The flag is the DP placement's.
      ASSIGN_OR_RETURN(Placement tp, planner::SolveTp(trace, tp_solver));
      tp_placement = std::make_unique<Placement>(std::move(tp));
    }
    const std::string name = file_placement != nullptr ? "file" : "semantic";

    std::vector<int> round_robin(heldout.size());
    for (size_t i = 0; i < heldout.size(); ++i) round_robin[i] = static_cast<int>(i % g);
    const std::vector<int> by_affinity = planner::AffinityRequests(
        heldout_ids, affinity.DpScores(*dp_placement, config.vocab_size), g);
    std::fprintf(stderr, "G = %d: running DP...\n", g);
    ASSIGN_OR_RETURN(Row r,
                     RunConfig(dir, heldout, vanilla, AttentionMode::kDp, nullptr, round_robin));
    r.mode = "dp";
    r.placement = "vanilla+round_robin";
    rows.push_back(r);
    ASSIGN_OR_RETURN(
        r, RunConfig(dir, heldout, *dp_placement, AttentionMode::kDp, nullptr, by_affinity));
    r.mode = "dp";
    r.placement = name + "+affinity";
    rows.push_back(r);
    const int replicas = absl::GetFlag(FLAGS_replicas);
    if (replicas > 0) {
      const std::vector<int> profile_requests =
          planner::AffinityRequests(trace, affinity.DpScores(*dp_placement, config.vocab_size), g);
      ASSIGN_OR_RETURN(
          Placement replicated,
          planner::AddHotReplicas(trace, *dp_placement,
                                  planner::TokensOfRequests(trace, profile_requests), replicas));
      const std::vector<int> requests = planner::AffinityRequests(
          heldout_ids, affinity.DpScores(replicated, config.vocab_size), g);
      for (const bool choice : {false, true}) {
        ASSIGN_OR_RETURN(
            r, RunConfig(dir, heldout, replicated, AttentionMode::kDp, nullptr, requests, choice));
        r.mode = "dp";
        r.placement = absl::StrCat(name, "-r", replicas, "+affinity", choice ? "+choice" : "+home");
        rows.push_back(r);
      }
      // EPLB with as many replicas (locality-blind: round-robin requests), with the choice.
      ASSIGN_OR_RETURN(Placement eplb_homes, planner::EplbPlacement(trace, g));
      ASSIGN_OR_RETURN(Placement eplb, planner::EplbReplicas(trace, eplb_homes, replicas));
      ASSIGN_OR_RETURN(r, RunConfig(dir, heldout, eplb, AttentionMode::kDp, nullptr, round_robin));
      r.mode = "dp";
      r.placement = absl::StrCat("eplb-r", replicas, "+round_robin+choice");
      rows.push_back(r);
    }
    if (!tp_ok) continue;
    std::fprintf(stderr, "G = %d: running TP...\n", g);
    const auto transitions = planner::LayerAffinity::Build(trace, *tp_placement);
    auto predictor =
        std::make_unique<engine::DevicePredictor>(affinity, *tp_placement, transitions.Table());
    auto token_only = std::make_unique<engine::DevicePredictor>(affinity, *tp_placement);
    ASSIGN_OR_RETURN(r, RunConfig(dir, heldout, vanilla, AttentionMode::kTp, nullptr, {}));
    r.mode = "tp_plain";
    r.placement = "vanilla";
    rows.push_back(r);
    ASSIGN_OR_RETURN(r, RunConfig(dir, heldout, *tp_placement, AttentionMode::kTp, nullptr, {}));
    r.mode = "tp_plain";
    r.placement = name;
    rows.push_back(r);
    ASSIGN_OR_RETURN(
        r, RunConfig(dir, heldout, *tp_placement, AttentionMode::kTp, token_only.get(), {}));
    r.mode = "tp_shuffled_T";  // Token table only.
    r.placement = name;
    rows.push_back(r);
    ASSIGN_OR_RETURN(
        r, RunConfig(dir, heldout, *tp_placement, AttentionMode::kTp, predictor.get(), {}));
    r.mode = "tp_shuffled";  // T and A.
    r.placement = name;
    rows.push_back(r);
    if (replicas > 0) {
      ASSIGN_OR_RETURN(
          Placement replicated,
          planner::AddHotReplicas(
              trace, *tp_placement,
              planner::SrsTokens(trace, affinity, *tp_placement, 256, nullptr, 0.05), replicas));
      auto replicated_predictor = std::make_unique<engine::DevicePredictor>(affinity, replicated);
      ASSIGN_OR_RETURN(r, RunConfig(dir, heldout, replicated, AttentionMode::kTp,
                                    replicated_predictor.get(), {}));
      r.mode = "tp_shuffled_T";
      r.placement = absl::StrCat(name, "-r", replicas);
      rows.push_back(r);
    }
  }

  std::printf(
      "bench_ep: %s, %zu held-out prompts (%lld tokens), %d decode steps; "
      "profile: %zu prompts\n",
      dir.c_str(), heldout.size(), static_cast<long long>(heldout_tokens),
      absl::GetFlag(FLAGS_decode_steps), profile.size());
  std::printf("%-3s %-14s %-29s %7s %8s %13s %13s %9s %9s %9s %8s\n", "G", "mode", "placement",
              "LAR", "max/mean", "a2a B/token", "RS+AG B/tok", "disp ms", "expt ms", "comb ms",
              "wall s");
  nlohmann::json table = nlohmann::json::array();
  for (const Row& r : rows) {
    std::printf("%-3d %-14s %-29s %7.3f %8.3f %13.0f %13.0f %9.3f %9.3f %9.3f %8.2f\n", r.ranks,
                r.mode.c_str(), r.placement.c_str(), r.lar, r.load_max_mean, r.a2a_bytes_per_token,
                r.rsag_bytes_per_token, r.dispatch_ms, r.expert_ms, r.combine_ms, r.wall_s);
    table.push_back({{"ranks", r.ranks},
                     {"mode", r.mode},
                     {"placement", r.placement},
                     {"lar", r.lar},
                     {"load_max_mean", r.load_max_mean},
                     {"a2a_bytes_per_token", r.a2a_bytes_per_token},
                     {"rsag_bytes_per_token", r.rsag_bytes_per_token},
                     {"dispatch_ms_per_layer", r.dispatch_ms},
                     {"expert_ms_per_layer", r.expert_ms},
                     {"combine_ms_per_layer", r.combine_ms},
                     {"wall_s", r.wall_s}});
  }
  if (absl::GetFlag(FLAGS_json)) std::printf("%s\n", table.dump().c_str());
  return absl::OkStatus();
}

}  // namespace
}  // namespace semmoe

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = semmoe::Main();
  if (!status.ok()) {
    std::fprintf(stderr, "bench_ep: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
