// simulate: the scale model (docs/SIMULATE.md). Replays a routing trace under a placement version
// by planner eval's rules and simulates the serving loop on a cluster profile: the MoE-layer
// time and its parts, the all-to-all share, the step time, TTFT / TPOT and the goodput under an
// SLO.
//
//   simulate --model DIR|--shape NAME --db DB --version V --traces TRACE --cluster PROFILE
//            [--hosts H --ranks_per_host R] [--link_mbit M] [--rate R] [--requests N]
//            [--mode dp|tp] [--router affinity|round_robin] [--set FIGURE=VALUE,...] [--json]
//   simulate --cluster PROFILE --print_profile
//   simulate --model DIR|--shape NAME --print_shape   (for planner build/predict --shape FILE)
//
// Exit status: 0 on success, 1 when an input is refused (named on stderr), 2 for bad usage.
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "engine/text/config.h"
#include "engine/text/sim_shape.h"
#include "nlohmann/json.hpp"
#include "planner/placement/topology.h"
#include "planner/sim/cluster_profile.h"
#include "planner/sim/model_shape.h"
#include "planner/sim/scenario.h"
#include "planner/sim/serving_sim.h"
#include "planner/sim/step_cost.h"
#include "tools/simulate_lab.h"
#include "tools/simulate_synth.h"

ABSL_FLAG(std::string, model, "", "model directory (its config.json gives the shape)");
ABSL_FLAG(std::string, shape, "",
          "built-in model shape instead of --model: deepseek-v3, qwen3-235b");
ABSL_FLAG(std::string, db, "", "placement database");
ABSL_FLAG(int64_t, version, 0, "placement version");
ABSL_FLAG(std::vector<std::string>, traces, {},
          "routing traces (files or array-trace directories)");
ABSL_FLAG(std::string, cluster, "", "cluster profile: lab, h100, h200 or a profile file");
ABSL_FLAG(int, hosts, 0, "nodes (default: devices / the profile's ranks_per_node, or one)");
ABSL_FLAG(int, ranks_per_host, 0, "ranks per node (default: devices / --hosts)");
ABSL_FLAG(double, link_mbit, 0, "the link between nodes in Mbit/s (sets inter_bw)");
ABSL_FLAG(std::vector<std::string>, set, {}, "FIGURE=VALUE overrides of the profile's figures");
ABSL_FLAG(double, rate, 4, "request arrival rate (requests/s, Poisson)");
ABSL_FLAG(int64_t, requests, 1000, "requests to simulate");
ABSL_FLAG(int64_t, requests_synth, 0, "synth: requests to generate (0: the --like traces')");
ABSL_FLAG(int, output_tokens, 32, "tokens each request generates");
ABSL_FLAG(int64_t, max_prompt_tokens, 0, "cut prompts to this many tokens (0: the trace's)");
ABSL_FLAG(uint64_t, seed, 1, "arrival process seed");
ABSL_FLAG(std::string, mode, "", "dp or tp (default: the version's mode)");
ABSL_FLAG(std::string, router, "",
          "DP request → rank as the router places it: affinity (the version's tables), "
          "least_loaded, round_robin, time (the step-cost rule, predicting with --cluster); or "
          "affinity_offline (planner eval's rule). Default: "
          "affinity when the version has tables, else round_robin");
ABSL_FLAG(int64_t, max_batch_tokens, 2048,
          "tokens per step (per rank under DP; engine serve's default)");
ABSL_FLAG(int, max_running, 64,
          "sequences running at once (per rank under DP; engine serve's default)");
ABSL_FLAG(int, tp_batch_tokens, 256, "TP: tokens per batch of the token → rank schedule");
ABSL_FLAG(double, slo_ttft_ms, 1000, "SLO: time to first token");
ABSL_FLAG(double, slo_tpot_ms, 200, "SLO: time per output token");
ABSL_FLAG(bool, json, false, "print one JSON object");
ABSL_FLAG(bool, print_profile, false, "print the cluster profile (after --set) and exit");
ABSL_FLAG(bool, print_shape, false,
          "print the model's shape (--model DIR or --shape NAME) as JSON and exit: what planner "
          "build/predict --shape FILE read");
ABSL_FLAG(int, devices, 0, "without --db: a vanilla placement over this many devices");
ABSL_FLAG(std::string, rates, "", "a sweep: comma-separated rates, --point_s seconds each");
ABSL_FLAG(double, point_s, 12, "a sweep point's seconds of arrivals (the lab's loadgen: 12)");
ABSL_FLAG(bool, node_dedup, false, "node-level dedup (the two-stage exchange) over the topology");
ABSL_FLAG(
    std::vector<std::string>, lab, {},
    "fit / check: bench.sh --json files or settings' JSON files (their work dirs must exist)");
ABSL_FLAG(std::vector<std::string>, figures,
          std::vector<std::string>({"collective_latency", "message_latency", "intra_bw", "flops",
                                    "kernel_overhead", "step_skew", "step_overhead",
                                    "shared_core_wait"}),
          "fit: the profile figures to fit");
ABSL_FLAG(std::string, out, "", "fit: where to write the fitted profile; synth: the trace");
ABSL_FLAG(std::vector<std::string>, like, {}, "synth: the trained model's traces to match");
ABSL_FLAG(std::string, domains, "", "synth: prompts JSONL with \"id\" and \"domain\"");
ABSL_FLAG(std::string, params, "", "synth: skew,token,domain,layer (skips the fit)");
ABSL_FLAG(std::string, calibrate, "trained",
          "synth: the trace's locality — trained (--like's statistics), paper (the planner's DP "
          "placement reaches the paper's in-sample LAR, 62-68 % at EP 4 on DeepSeek-V2-Lite's or "
          "Qwen3-30B-A3B's shape) or none (no locality)");
ABSL_FLAG(std::string, node_limit, "",
          "synth: group-limited routing GROUPS:TOP (DeepSeek-V3: 8:4, a token's experts within 4 "
          "of 8 groups); empty: off");

namespace semmoe::tools {
namespace {

using planner::sim::ClusterProfile;
using planner::sim::ModelShape;

absl::StatusOr<ClusterProfile> Profile() {
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
  return profile;
}

absl::StatusOr<ModelShape> Shape() {
  ModelShape shape;
  if (!absl::GetFlag(FLAGS_shape).empty()) {
    ASSIGN_OR_RETURN(shape, planner::sim::KnownShape(absl::GetFlag(FLAGS_shape)));
  } else if (!absl::GetFlag(FLAGS_model).empty()) {
    ASSIGN_OR_RETURN(engine::model::ModelConfig config,
                     engine::model::LoadModelConfig(absl::GetFlag(FLAGS_model)));
    shape = engine::model::ShapeFromConfig(config, absl::GetFlag(FLAGS_model));
  } else {
    return absl::InvalidArgumentError("give --model DIR or --shape NAME");
  }
  RETURN_IF_ERROR(planner::sim::CheckShape(shape));
  return shape;
}

// The most requests one rate simulates (one run: --requests; a sweep point: rate × --point_s),
// and the most tokens they generate: about a minute of simulation on one core.
constexpr int64_t kMaxRequests = 1'000'000;
constexpr double kMaxTokens = 1e9;
constexpr size_t kMaxSweepPoints = 64;

// Every numeric flag in its range, before anything is loaded; each error names its flag.
absl::Status CheckFlags() {
  struct IntFlag {
    const char* name;
    int64_t value, min, max;
  };
  const IntFlag ints[] = {
      {"requests", absl::GetFlag(FLAGS_requests), 1, kMaxRequests},
      {"requests_synth", absl::GetFlag(FLAGS_requests_synth), 0, kMaxRequests},
      {"output_tokens", absl::GetFlag(FLAGS_output_tokens), 1, 1 << 17},
      {"max_prompt_tokens", absl::GetFlag(FLAGS_max_prompt_tokens), 0, 1 << 20},
      {"max_batch_tokens", absl::GetFlag(FLAGS_max_batch_tokens), 1, 1 << 24},
      {"max_running", absl::GetFlag(FLAGS_max_running), 1, 1 << 16},
      {"tp_batch_tokens", absl::GetFlag(FLAGS_tp_batch_tokens), 1, 1 << 20},
      {"devices", absl::GetFlag(FLAGS_devices), 0, 1 << 16},
      {"hosts", absl::GetFlag(FLAGS_hosts), 0, 4096},
      {"ranks_per_host", absl::GetFlag(FLAGS_ranks_per_host), 0, 1024},
  };
  for (const IntFlag& f : ints) {
    if (f.value < f.min || f.value > f.max) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", f.name, " ", f.value, " must be from ", f.min, " to ", f.max));
    }
  }
  struct DoubleFlag {
    const char* name;
    double value, max;
    bool zero_ok;
  };
  const DoubleFlag doubles[] = {
      {"rate", absl::GetFlag(FLAGS_rate), 1e6, false},
      {"point_s", absl::GetFlag(FLAGS_point_s), 86400, false},
      {"slo_ttft_ms", absl::GetFlag(FLAGS_slo_ttft_ms), 1e9, false},
      {"slo_tpot_ms", absl::GetFlag(FLAGS_slo_tpot_ms), 1e9, false},
      {"link_mbit", absl::GetFlag(FLAGS_link_mbit), 1e9, true},
  };
  for (const DoubleFlag& f : doubles) {
    if (!(f.value > 0 || (f.zero_ok && f.value == 0)) || !(f.value <= f.max)) {
      return absl::InvalidArgumentError(absl::StrCat("--", f.name, " ", f.value, " must be ",
                                                     f.zero_ok ? "from 0" : "above 0", " to ",
                                                     f.max));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> Rates() {
  std::vector<double> rates;
  // How many requests a point simulates, and what they generate, within the bounds.
  auto fits = [](absl::string_view what, double requests) -> absl::Status {
    const double tokens = requests * absl::GetFlag(FLAGS_output_tokens);
    if (requests > kMaxRequests || tokens > kMaxTokens) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " simulates ", requests, " requests of --output_tokens ",
                       absl::GetFlag(FLAGS_output_tokens), "; the most is ", kMaxRequests,
                       " requests and ", kMaxTokens, " tokens"));
    }
    return absl::OkStatus();
  };
  const std::string text = absl::GetFlag(FLAGS_rates);
  if (text.empty()) {
    RETURN_IF_ERROR(fits("--requests", static_cast<double>(absl::GetFlag(FLAGS_requests))));
    return std::vector<double>{absl::GetFlag(FLAGS_rate)};
  }
  for (absl::string_view r : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    double rate = 0;
    if (!absl::SimpleAtod(r, &rate) || !(rate > 0) || !std::isfinite(rate)) {
      return absl::InvalidArgumentError(absl::StrCat("--rates: \"", r, "\" is not a rate > 0"));
    }
    RETURN_IF_ERROR(fits(absl::StrCat("--rates ", r, " × --point_s ", absl::GetFlag(FLAGS_point_s)),
                         std::ceil(rate * absl::GetFlag(FLAGS_point_s))));
    rates.push_back(rate);
  }
  if (rates.empty() || rates.size() > kMaxSweepPoints) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rates: 1 to ", kMaxSweepPoints, " rates, got ", rates.size()));
  }
  return rates;
}

nlohmann::ordered_json PointJson(double rate, const planner::sim::SimResult& r) {
  const double ms = 1e3;
  return {{"rate", rate},
          {"requests", r.requests},
          {"moe_layer_ms", r.moe.total() * ms},
          {"step_ms", r.step_s * ms},
          {"ttft_p50_ms", r.ttft_s.p50 * ms},
          {"ttft_p99_ms", r.ttft_s.p99 * ms},
          {"tpot_p50_ms", r.tpot_s.p50 * ms},
          {"tpot_p99_ms", r.tpot_s.p99 * ms},
          {"throughput_rps", r.throughput_rps},
          {"goodput_rps", r.goodput_rps},
          {"slo_attainment", r.slo_attainment}};
}

// The default command: one configuration, at one rate or over a sweep.
absl::StatusOr<int> Simulate() {
  if (absl::GetFlag(FLAGS_print_shape)) {
    ASSIGN_OR_RETURN(const ModelShape shape, Shape());
    std::cout << planner::sim::ShapeToJson(shape) << "\n";
    return 0;
  }
  ASSIGN_OR_RETURN(ClusterProfile profile, Profile());
  if (absl::GetFlag(FLAGS_print_profile)) {
    std::cout << planner::sim::ProfileJson(profile);
    return 0;
  }
  ASSIGN_OR_RETURN(ModelShape shape, Shape());
  if (absl::GetFlag(FLAGS_db).empty() && absl::GetFlag(FLAGS_devices) <= 0) {
    return absl::InvalidArgumentError("give --db DB --version V (or --devices G for vanilla)");
  }
  const planner::sim::ScenarioSpec spec{.db = absl::GetFlag(FLAGS_db),
                                        .version = absl::GetFlag(FLAGS_version),
                                        .devices = absl::GetFlag(FLAGS_devices),
                                        .traces = absl::GetFlag(FLAGS_traces),
                                        .mode = absl::GetFlag(FLAGS_mode),
                                        .router = absl::GetFlag(FLAGS_router),
                                        .hosts = absl::GetFlag(FLAGS_hosts),
                                        .ranks_per_host = absl::GetFlag(FLAGS_ranks_per_host),
                                        .node_dedup = absl::GetFlag(FLAGS_node_dedup),
                                        .tp_batch_tokens = absl::GetFlag(FLAGS_tp_batch_tokens)};
  ASSIGN_OR_RETURN(planner::sim::Scenario s, planner::sim::LoadScenario(spec, shape, profile));
  ASSIGN_OR_RETURN(std::vector<double> rates, Rates());
  const bool sweep = !absl::GetFlag(FLAGS_rates).empty();
  const planner::sim::Workload workload{.requests = absl::GetFlag(FLAGS_requests),
                                        .output_tokens = absl::GetFlag(FLAGS_output_tokens),
                                        .max_prompt_tokens = absl::GetFlag(FLAGS_max_prompt_tokens),
                                        .seed = absl::GetFlag(FLAGS_seed)};
  const planner::sim::ServingOptions options{
      .max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens),
      .max_running = absl::GetFlag(FLAGS_max_running),
      .slo_ttft_s = absl::GetFlag(FLAGS_slo_ttft_ms) / 1e3,
      .slo_tpot_s = absl::GetFlag(FLAGS_slo_tpot_ms) / 1e3};
  // One rate: --requests of them; a sweep: --point_s seconds of arrivals per rate.
  const double point_s =
      sweep ? absl::GetFlag(FLAGS_point_s) : static_cast<double>(workload.requests) / rates[0];
  ASSIGN_OR_RETURN(planner::sim::SweepResult r,
                   planner::sim::RunSweep(s, profile, workload, options, rates, point_s));
  const planner::sim::SimResult& last = r.points.back().result;
  const double ms = 1e3;
  nlohmann::ordered_json j = {{"model", shape.name},
                              {"version", s.version},
                              {"placement", s.name},
                              {"algorithm", s.algorithm},
                              {"devices", s.placement.num_devices()},
                              {"topology", s.topology.Describe()},
                              {"node_dedup", last.two_stage},
                              {"cluster", profile.name},
                              {"mode", s.mode},
                              {"router", s.router},
                              {"moe_layer_ms", r.moe.total() * ms},
                              {"wait_ms", r.moe.wait * ms},
                              {"dispatch_ms", r.moe.dispatch * ms},
                              {"experts_ms", r.moe.experts * ms},
                              {"combine_ms", r.moe.combine * ms},
                              {"a2a_share", r.a2a_share()},
                              {"attention_ms", r.attention_s * ms},
                              {"srs_ms", r.srs_s * ms},
                              {"sag_ms", r.sag_s * ms},
                              {"step_ms", r.step_s * ms}};
  if (sweep) {
    j["max_rate_in_slo"] = r.best_rate;
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const auto& p : r.points) points.push_back(PointJson(p.rate, p.result));
    j["sweep"] = points;
  } else {
    const nlohmann::ordered_json p = PointJson(rates[0], last);
    for (auto it = p.begin(); it != p.end(); ++it) {
      if (it.key() != "moe_layer_ms" && it.key() != "step_ms") j[it.key()] = it.value();
    }
  }
  // A profile's figures can each be in range and still overflow a time (flops 1e-300): said,
  // never printed as null.
  std::vector<std::string> overflowed;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_number_float() && !std::isfinite(it.value().get<double>())) {
      overflowed.push_back(it.key());
    }
  }
  if (!overflowed.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the profile ", profile.name, " gives non-finite ", absl::StrJoin(overflowed, ", "),
        ": a figure far outside any hardware's (see --print_profile)"));
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << j.dump() << "\n";
  } else {
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::cout << it.key() << ": " << it.value().dump() << "\n";
    }
  }
  return 0;
}

absl::StatusOr<int> FitCommand() {
  ASSIGN_OR_RETURN(ModelShape shape, Shape());
  ASSIGN_OR_RETURN(ClusterProfile start, Profile());
  return FitLab(shape, start, absl::GetFlag(FLAGS_lab), absl::GetFlag(FLAGS_figures),
                absl::GetFlag(FLAGS_out));
}

absl::StatusOr<int> SynthCommand() {
  ASSIGN_OR_RETURN(ModelShape shape, Shape());
  return SynthTrace(shape, {.like = absl::GetFlag(FLAGS_like),
                            .domains = absl::GetFlag(FLAGS_domains),
                            .requests = absl::GetFlag(FLAGS_requests_synth),
                            .seed = absl::GetFlag(FLAGS_seed),
                            .params = absl::GetFlag(FLAGS_params),
                            .out = absl::GetFlag(FLAGS_out),
                            .calibrate = absl::GetFlag(FLAGS_calibrate),
                            .node_limit = absl::GetFlag(FLAGS_node_limit)});
}

absl::StatusOr<int> CheckCommand() {
  ASSIGN_OR_RETURN(ModelShape shape, Shape());
  ASSIGN_OR_RETURN(ClusterProfile profile, Profile());
  return CheckLab(shape, profile, absl::GetFlag(FLAGS_lab), absl::GetFlag(FLAGS_json));
}

}  // namespace
}  // namespace semmoe::tools

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "simulate [fit|check] --model DIR|--shape NAME --db DB --version V --traces TRACE "
      "--cluster PROFILE [--rate R | --rates R1,R2,...] [--json]  (docs/SIMULATE.md)");
  const std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  const std::string command = args.size() >= 2 ? args[1] : "";
  if (args.size() > 2 ||
      (!command.empty() && command != "fit" && command != "check" && command != "synth")) {
    std::cerr << "simulate: unknown command \"" << command << "\" (fit, check, synth or none)\n";
    return 2;
  }
  if (absl::Status flags = semmoe::tools::CheckFlags(); !flags.ok()) {
    std::cerr << "simulate: " << flags.message() << "\n";
    return 2;
  }
  absl::StatusOr<int> rc = command == "fit"     ? semmoe::tools::FitCommand()
                           : command == "check" ? semmoe::tools::CheckCommand()
                           : command == "synth" ? semmoe::tools::SynthCommand()
                                                : semmoe::tools::Simulate();
  if (!rc.ok()) {
    std::cerr << "simulate: " << rc.status().message() << "\n";
    return absl::IsInvalidArgument(rc.status()) && rc.status().message().rfind("give ", 0) == 0 ? 2
                                                                                                : 1;
  }
  return *rc;
}
