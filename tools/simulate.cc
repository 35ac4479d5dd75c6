// simulate: the scale model (docs/SIMULATE.md). Replays a routing trace under a placement version
// by planner eval's rules and simulates the serving loop on a cluster profile: the MoE-layer
// time and its parts, the all-to-all share, the step time, TTFT / TPOT and the goodput under an
// SLO.
//
//   simulate --model DIR|--shape NAME --db DB --version V --traces TRACE --cluster PROFILE
//            [--hosts H --ranks_per_host R] [--link_mbit M] [--rate R] [--requests N]
//            [--mode dp|tp] [--router affinity|round_robin] [--set FIGURE=VALUE,...] [--json]
//   simulate --cluster PROFILE --print_profile
//
// Exit status: 0 on success, 1 when an input is refused (named on stderr), 2 for bad usage.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "engine/text/config.h"
#include "nlohmann/json.hpp"
#include "planner/affinity/token_affinity.h"
#include "planner/cli/commands.h"
#include "planner/eval/evaluate.h"
#include "planner/eval/schedule.h"
#include "planner/placement/topology.h"
#include "planner/sim/cluster_profile.h"
#include "planner/sim/model_shape.h"
#include "planner/sim/replay.h"
#include "planner/sim/serving_sim.h"
#include "planner/sim/step_cost.h"
#include "planner/store/placement_store.h"

ABSL_FLAG(std::string, model, "", "model directory (its config.json gives the shape)");
ABSL_FLAG(std::string, shape, "", "built-in model shape instead of --model: deepseek-v3, qwen3-235b");
ABSL_FLAG(std::string, db, "", "placement database");
ABSL_FLAG(int64_t, version, 0, "placement version");
ABSL_FLAG(std::vector<std::string>, traces, {}, "routing traces (files or array-trace directories)");
ABSL_FLAG(std::string, cluster, "", "cluster profile: lab, h100, h200 or a profile file");
ABSL_FLAG(int, hosts, 0, "nodes (default: devices / the profile's ranks_per_node, or one)");
ABSL_FLAG(int, ranks_per_host, 0, "ranks per node (default: devices / --hosts)");
ABSL_FLAG(double, link_mbit, 0, "the link between nodes in Mbit/s (sets inter_bw)");
ABSL_FLAG(std::vector<std::string>, set, {}, "FIGURE=VALUE overrides of the profile's figures");
ABSL_FLAG(double, rate, 4, "request arrival rate (requests/s, Poisson)");
ABSL_FLAG(int64_t, requests, 1000, "requests to simulate");
ABSL_FLAG(int, output_tokens, 32, "tokens each request generates");
ABSL_FLAG(int64_t, max_prompt_tokens, 0, "cut prompts to this many tokens (0: the trace's)");
ABSL_FLAG(uint64_t, seed, 1, "arrival process seed");
ABSL_FLAG(std::string, mode, "", "dp or tp (default: the version's mode)");
ABSL_FLAG(std::string, router, "",
          "DP request → rank: affinity (the version's tables) or round_robin (default: affinity "
          "when the version has tables)");
ABSL_FLAG(int64_t, max_batch_tokens, 8192, "tokens per step (per rank under DP)");
ABSL_FLAG(int, max_running, 256, "sequences running at once (per rank under DP)");
ABSL_FLAG(int, tp_batch_tokens, 256, "TP: tokens per batch of the token → rank schedule");
ABSL_FLAG(double, slo_ttft_ms, 1000, "SLO: time to first token");
ABSL_FLAG(double, slo_tpot_ms, 200, "SLO: time per output token");
ABSL_FLAG(bool, json, false, "print one JSON object");
ABSL_FLAG(bool, print_profile, false, "print the cluster profile (after --set) and exit");

namespace semmoe::tools {
namespace {

using planner::sim::ClusterProfile;
using planner::sim::ModelShape;

// The scale model's view of a checkpoint's config.json.
ModelShape ShapeOf(const engine::model::ModelConfig& c, const std::string& name) {
  ModelShape s;
  s.name = name;
  s.hidden = c.hidden_size;
  s.vocab = c.vocab_size;
  for (int l = 0; l < c.num_layers; ++l) s.moe_layer.push_back(c.IsMoeLayer(l));
  const int64_t h = c.hidden_size;
  if (c.mla) {
    const auto& m = c.mla_dims;
    const int64_t heads = c.num_heads, qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
    s.attention_params =
        (m.q_lora_rank > 0 ? h * m.q_lora_rank + int64_t{m.q_lora_rank} * heads * qk
                           : h * heads * qk) +
        h * (m.kv_lora_rank + m.qk_rope_head_dim) +
        int64_t{m.kv_lora_rank} * heads * (m.qk_nope_head_dim + c.v_head_dim) +
        heads * c.v_head_dim * h;
  } else {
    s.attention_params = h * c.q_size() + 2 * h * c.kv_size() + int64_t{c.attn_out_size()} * h;
  }
  s.attention_heads = c.num_heads;
  s.qk_head_dim = c.head_dim;
  s.v_head_dim = c.v_head_dim;
  s.kv_values = c.kv_shape().floats();
  s.num_experts = c.num_experts;
  s.top_k = c.top_k;
  s.expert_intermediate = c.moe_intermediate_size;
  s.shared_intermediate = c.shared_expert_intermediate_size;
  s.dense_intermediate = c.intermediate_size;
  return s;
}

absl::StatusOr<int> Run() {
  ASSIGN_OR_RETURN(ClusterProfile profile,
                   planner::sim::LoadClusterProfile(absl::GetFlag(FLAGS_cluster)));
  for (const std::string& kv : absl::GetFlag(FLAGS_set)) {
    const std::vector<std::string> parts = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    double value = 0;
    if (parts.size() != 2 || !absl::SimpleAtod(parts[1], &value)) {
      return absl::InvalidArgumentError(absl::StrCat("--set ", kv, ": expected FIGURE=NUMBER"));
    }
    RETURN_IF_ERROR(planner::sim::OverrideFigure(profile, parts[0], value));
  }
  if (const double mbit = absl::GetFlag(FLAGS_link_mbit); mbit != 0) {
    if (!(mbit > 0)) return absl::InvalidArgumentError("--link_mbit must be positive");
    profile.inter_bw = {mbit * 1e6 / 8, absl::StrCat("--link_mbit ", mbit)};
  }
  if (absl::GetFlag(FLAGS_print_profile)) {
    std::cout << planner::sim::ProfileJson(profile);
    return 0;
  }

  // The model.
  ModelShape shape;
  if (!absl::GetFlag(FLAGS_shape).empty()) {
    ASSIGN_OR_RETURN(shape, planner::sim::KnownShape(absl::GetFlag(FLAGS_shape)));
  } else if (!absl::GetFlag(FLAGS_model).empty()) {
    ASSIGN_OR_RETURN(engine::model::ModelConfig config,
                     engine::model::LoadModelConfig(absl::GetFlag(FLAGS_model)));
    shape = ShapeOf(config, absl::GetFlag(FLAGS_model));
  } else {
    return absl::InvalidArgumentError("give --model DIR or --shape NAME");
  }
  RETURN_IF_ERROR(planner::sim::CheckShape(shape));

  // The placement and the trace.
  if (absl::GetFlag(FLAGS_db).empty() || absl::GetFlag(FLAGS_version) <= 0) {
    return absl::InvalidArgumentError("give --db DB and --version V");
  }
  ASSIGN_OR_RETURN(auto store, planner::PlacementStore::Open(absl::GetFlag(FLAGS_db)));
  ASSIGN_OR_RETURN(planner::PlacementVersion v, store->Get(absl::GetFlag(FLAGS_version)));
  const planner::Placement& p = v.placement;
  const int g = p.num_devices();
  ASSIGN_OR_RETURN(planner::trace::TraceSet trace,
                   planner::cli::LoadTraces(absl::GetFlag(FLAGS_traces)));
  std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode.empty()) {
    const nlohmann::json params = nlohmann::json::parse(v.params_json, nullptr, false);
    mode = params.is_object() && params.contains("mode") && params["mode"].is_string()
               ? params["mode"].get<std::string>()
               : "dp";
  }
  if (mode != "dp" && mode != "tp") {
    return absl::InvalidArgumentError(absl::StrCat("--mode ", mode, ": expected dp or tp"));
  }

  // The topology: --hosts × --ranks_per_host, else the version's, else the profile's nodes.
  int hosts = absl::GetFlag(FLAGS_hosts), per_host = absl::GetFlag(FLAGS_ranks_per_host);
  std::optional<planner::Topology> topo;
  if (hosts > 0 || per_host > 0) {
    if (hosts <= 0) hosts = per_host > 0 ? g / per_host : 1;
    if (per_host <= 0) per_host = g / hosts;
    ASSIGN_OR_RETURN(planner::Topology t, planner::Topology::Nodes(hosts, per_host));
    topo = std::move(t);
  } else if (p.topology() != nullptr) {
    topo = *p.topology();
  } else {
    const int m = static_cast<int>(profile.ranks_per_node.value);
    ASSIGN_OR_RETURN(planner::Topology t, g % m == 0 && g > m ? planner::Topology::Nodes(g / m, m)
                                                              : planner::Topology::Flat(g));
    topo = std::move(t);
  }
  if (topo->num_ranks() != g) {
    return absl::InvalidArgumentError(absl::StrCat("topology ", topo->Describe(), " has ",
                                                   topo->num_ranks(), " ranks; version ",
                                                   v.version, " has ", g, " devices"));
  }

  // The schedule, by planner eval's rules.
  std::optional<planner::TokenAffinity> affinity;
  auto tables = store->GetAffinityTables(v.version);
  if (tables.ok()) {
    ASSIGN_OR_RETURN(planner::TokenAffinity parsed, planner::TokenAffinity::Deserialize(*tables));
    RETURN_IF_ERROR(parsed.CheckMatches(p, absl::StrCat("version ", v.version, "'s tables")));
    affinity = std::move(parsed);
  } else if (!absl::IsNotFound(tables.status())) {
    return tables.status();
  }
  std::string router = absl::GetFlag(FLAGS_router);
  if (router.empty()) router = affinity ? "affinity" : "round_robin";
  if (router != "affinity" && router != "round_robin") {
    return absl::InvalidArgumentError(
        absl::StrCat("--router ", router, ": expected affinity or round_robin"));
  }
  if (router == "affinity" && !affinity) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--router affinity: version ", v.version, " has no affinity tables"));
  }
  uint32_t vocab = 0;
  for (uint32_t t : trace.tokens) vocab = std::max(vocab, t + 1);
  planner::sim::Replay replay;
  if (mode == "dp") {
    const std::vector<int> routed =
        router == "affinity"
            ? planner::AffinityRequests(trace, affinity->DpScores(p, vocab), g)
            : planner::RoundRobinRequests(trace, g);
    ASSIGN_OR_RETURN(replay, planner::sim::ReplayDp(trace, p, routed));
  } else {
    const int batch = absl::GetFlag(FLAGS_tp_batch_tokens);
    ASSIGN_OR_RETURN(replay, planner::sim::ReplayTp(
                                 trace, p,
                                 router == "affinity"
                                     ? planner::SrsTokens(trace, *affinity, p, batch)
                                     : planner::ContiguousChunks(trace, g, batch)));
  }

  const planner::sim::StepCost cost(shape, profile, *topo);
  const planner::sim::Workload workload{.rate = absl::GetFlag(FLAGS_rate),
                                        .requests = absl::GetFlag(FLAGS_requests),
                                        .output_tokens = absl::GetFlag(FLAGS_output_tokens),
                                        .max_prompt_tokens = absl::GetFlag(FLAGS_max_prompt_tokens),
                                        .seed = absl::GetFlag(FLAGS_seed)};
  const planner::sim::ServingOptions options{
      .mode = mode == "dp" ? planner::sim::AttentionMode::kDp : planner::sim::AttentionMode::kTp,
      .max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens),
      .max_running = absl::GetFlag(FLAGS_max_running),
      .slo_ttft_s = absl::GetFlag(FLAGS_slo_ttft_ms) / 1e3,
      .slo_tpot_s = absl::GetFlag(FLAGS_slo_tpot_ms) / 1e3};
  ASSIGN_OR_RETURN(planner::sim::SimResult r,
                   planner::sim::Simulate(trace, replay, shape, cost, workload, options));

  const double ms = 1e3;
  nlohmann::ordered_json j = {
      {"model", shape.name},
      {"version", v.version},
      {"algorithm", v.algorithm},
      {"devices", g},
      {"topology", topo->Describe()},
      {"cluster", profile.name},
      {"mode", mode},
      {"router", router},
      {"rate", workload.rate},
      {"requests", workload.requests},
      {"moe_layer_ms", r.moe.total() * ms},
      {"wait_ms", r.moe.wait * ms},
      {"dispatch_ms", r.moe.dispatch * ms},
      {"experts_ms", r.moe.experts * ms},
      {"combine_ms", r.moe.combine * ms},
      {"a2a_share", r.a2a_share()},
      {"attention_ms", r.attention_s * ms},
      {"srs_ms", r.srs_s * ms},
      {"sag_ms", r.sag_s * ms},
      {"step_ms", r.step_s * ms},
      {"steps", r.steps},
      {"ttft_p50_ms", r.ttft_s.p50 * ms},
      {"ttft_p99_ms", r.ttft_s.p99 * ms},
      {"tpot_p50_ms", r.tpot_s.p50 * ms},
      {"tpot_p99_ms", r.tpot_s.p99 * ms},
      {"throughput_rps", r.throughput_rps},
      {"goodput_rps", r.goodput_rps},
      {"slo_attainment", r.slo_attainment},
      {"duration_s", r.duration_s},
      {"tokens", r.tokens}};
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << j.dump() << "\n";
  } else {
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::cout << it.key() << ": " << it.value().dump() << "\n";
    }
  }
  return 0;
}

}  // namespace
}  // namespace semmoe::tools

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "simulate --model DIR|--shape NAME --db DB --version V --traces TRACE --cluster PROFILE "
      "[--rate R] [--json]  (docs/SIMULATE.md)");
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<int> rc = semmoe::tools::Run();
  if (!rc.ok()) {
    std::cerr << "simulate: " << rc.status().message() << "\n";
    return absl::IsInvalidArgument(rc.status()) && rc.status().message().rfind("give ", 0) == 0
               ? 2
               : 1;
  }
  return *rc;
}
