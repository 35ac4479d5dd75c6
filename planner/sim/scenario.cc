#include "planner/sim/scenario.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "planner/affinity/prompt_scores.h"
#include "planner/affinity/token_affinity.h"
#include "planner/cli/commands.h"
#include "planner/eval/evaluate.h"
#include "planner/eval/schedule.h"
#include "planner/sim/step_cost.h"
#include "planner/sim/step_predictor.h"
#include "planner/store/placement_store.h"
#include "router/rebatch/assigner.h"

namespace semmoe::planner::sim {

absl::StatusOr<Scenario> LoadScenario(const ScenarioSpec& spec, const ModelShape& shape,
                                      const ClusterProfile& profile) {
  Scenario s;
  s.shape = shape;
  RETURN_IF_ERROR(CheckShape(shape));
  ASSIGN_OR_RETURN(s.trace, cli::LoadTraces(spec.traces));
  std::optional<TokenAffinity> affinity;
  std::string mode = spec.mode;
  if (spec.version > 0) {
    if (spec.db.empty()) return absl::InvalidArgumentError("a placement version needs --db");
    ASSIGN_OR_RETURN(auto store, PlacementStore::Open(spec.db));
    ASSIGN_OR_RETURN(PlacementVersion v, store->Get(spec.version));
    s.placement = v.placement;
    s.version = v.version;
    s.name = v.name;
    s.algorithm = v.algorithm;
    if (mode.empty()) mode = AttentionModeOf(v);
    auto tables = store->GetAffinityTables(v.version);
    if (tables.ok()) {
      ASSIGN_OR_RETURN(TokenAffinity parsed, TokenAffinity::Deserialize(*tables));
      RETURN_IF_ERROR(parsed.CheckMatches(
          v.placement, absl::StrCat("version ", v.version, "'s affinity tables")));
      affinity = std::move(parsed);
    } else if (!absl::IsNotFound(tables.status())) {
      return tables.status();
    }
  } else {
    if (spec.devices <= 0) return absl::InvalidArgumentError("vanilla needs a device count");
    std::vector<int> layers(s.trace.num_layers());
    for (int l = 0; l < s.trace.num_layers(); ++l) layers[l] = l;
    ASSIGN_OR_RETURN(s.placement,
                     Placement::Vanilla(layers, s.trace.header.num_experts, spec.devices));
    s.name = s.algorithm = "vanilla";
  }
  if (mode.empty()) mode = "dp";
  if (mode != "dp" && mode != "tp") {
    return absl::InvalidArgumentError(absl::StrCat("mode ", mode, ": expected dp or tp"));
  }
  s.mode = mode;
  const int g = s.placement.num_devices();

  // The topology: hosts × ranks per host, else the version's, else the profile's nodes.
  int hosts = spec.hosts, per_host = spec.ranks_per_host;
  if (hosts > 0 || per_host > 0) {
    if (hosts <= 0) hosts = std::max(1, g / std::max(1, per_host));
    if (per_host <= 0) per_host = g / hosts;
    ASSIGN_OR_RETURN(s.topology, Topology::Nodes(hosts, per_host));
  } else if (s.placement.topology() != nullptr) {
    s.topology = *s.placement.topology();
  } else {
    const int m = static_cast<int>(profile.ranks_per_node.value);
    ASSIGN_OR_RETURN(s.topology,
                     g % m == 0 && g > m ? Topology::Nodes(g / m, m) : Topology::Flat(g));
  }
  if (s.topology.num_ranks() != g) {
    return absl::InvalidArgumentError(absl::StrCat("topology ", s.topology.Describe(), " has ",
                                                   s.topology.num_ranks(), " ranks; the placement ",
                                                   g, " devices"));
  }
  s.node_dedup = spec.node_dedup;

  // The schedule, by planner eval's rules; under DP the router's online rule unless offline.
  const char* with_tables = spec.prefer_time && mode == "dp" ? "time" : "affinity";
  s.router = spec.router.empty() ? (affinity ? with_tables : "round_robin") : spec.router;
  if (s.router != "affinity" && s.router != "affinity_offline" && s.router != "round_robin" &&
      s.router != "least_loaded" && s.router != "time") {
    return absl::InvalidArgumentError(
        absl::StrCat("router ", s.router,
                     ": expected affinity, affinity_offline, least_loaded, round_robin or time"));
  }
  const bool wants_tables = s.router == "affinity" || s.router == "affinity_offline";
  if (wants_tables && !affinity) {
    return absl::FailedPreconditionError(
        absl::StrCat("router ", s.router, ": ", s.name, " has no affinity tables"));
  }
  uint32_t vocab = 0;
  for (uint32_t t : s.trace.tokens) vocab = std::max(vocab, t + 1);
  std::vector<float> scores;
  if (affinity) scores = affinity->DpScores(s.placement, vocab);
  if (mode == "dp") {
    // Each prompt's fit per rank (the affinity rule) or its expected share of activations per
    // rank (the time rule; without tables, none: even).
    const bool time_shares = s.router == "time" && affinity;
    if (s.router == "affinity" || time_shares) {
      const std::vector<float> terms = PromptLogTerms(scores, g);
      std::vector<double> fit(g);
      for (int r = 0; r < s.trace.num_requests(); ++r) {
        const auto prompt =
            absl::MakeConstSpan(s.trace.tokens.data() + s.trace.request_begin[r],
                                s.trace.request_begin[r + 1] - s.trace.request_begin[r]);
        if (time_shares) {
          PromptShares<uint32_t>(prompt, terms, g, absl::MakeSpan(fit));
        } else {
          SumPromptLogTerms<uint32_t>(prompt, terms, g, absl::MakeSpan(fit));
        }
        (time_shares ? s.share : s.fit).push_back(fit);
      }
    }
    const std::vector<int> routed = s.router == "affinity_offline"
                                        ? AffinityRequests(s.trace, scores, g)
                                        : RoundRobinRequests(s.trace, g);
    ASSIGN_OR_RETURN(s.replay, ReplayDp(s.trace, s.placement, routed));
  } else {
    ASSIGN_OR_RETURN(s.replay,
                     ReplayTp(s.trace, s.placement,
                              affinity && s.router != "round_robin"
                                  ? SrsTokens(s.trace, *affinity, s.placement, spec.tp_batch_tokens)
                                  : ContiguousChunks(s.trace, g, spec.tp_batch_tokens)));
  }
  return s;
}

absl::StatusOr<SweepResult> RunSweep(const Scenario& s, const ClusterProfile& profile,
                                     Workload workload, const ServingOptions& base,
                                     const std::vector<double>& rates, double point_s,
                                     double target_attainment) {
  if (rates.empty()) return absl::InvalidArgumentError("a sweep needs rates");
  if (!(point_s > 0)) return absl::InvalidArgumentError("a sweep point needs a duration");
  ServingOptions options = base;
  options.mode = s.mode == "tp" ? AttentionMode::kTp : AttentionMode::kDp;
  options.node_dedup = s.node_dedup;
  SweepResult out;
  int64_t moe_calls = 0, layer_calls = 0, steps = 0;
  // The online router (router/rebatch/assigner.h), fresh for every point.
  std::unique_ptr<router::Assigner> assigner;
  const int g = s.placement.num_devices();
  std::vector<router::RankLoad> loads(g);
  if (s.mode == "dp" && s.router != "affinity_offline") {
    options.route = [&](const RouteQuery& q) {
      for (int d = 0; d < g; ++d) {
        loads[d] = {.tokens_in_flight = q.tokens_in_flight[d],
                    .sequences = q.requests_in_flight[d],
                    .prefill_tokens = q.prefill_tokens[d]};
      }
      router::PendingRequest request{.load_tokens = q.load_tokens,
                                     .prompt_tokens = q.prompt_tokens};
      if (!s.fit.empty()) request.fit = s.fit[q.trace_request];
      if (!s.share.empty()) request.share = s.share[q.trace_request];
      return assigner->Assign({request}, loads)[0];
    };
  }
  std::vector<int> node_of;
  if (s.node_dedup) {
    for (int r = 0; r < g; ++r) node_of.push_back(s.topology.NodeOf(r));
  }
  const router::Policy policy = s.router == "affinity"       ? router::Policy::kSemantic
                                : s.router == "least_loaded" ? router::Policy::kLeastLoaded
                                : s.router == "time"         ? router::Policy::kTime
                                                             : router::Policy::kRoundRobin;
  std::shared_ptr<const StepPredictor> predictor;
  if (policy == router::Policy::kTime) {  // The router's model of this cluster.
    predictor = std::make_shared<StepPredictor>(
        s.shape, profile, s.topology,
        PredictorOptions{.max_batch_tokens = options.max_batch_tokens,
                         .max_running = options.max_running,
                         .node_dedup = s.node_dedup});
  }
  for (double rate : rates) {
    assigner = std::make_unique<router::Assigner>(policy, 0.05, node_of, predictor);
    workload.rate = rate;
    workload.requests = std::max<int64_t>(1, std::llround(rate * point_s));
    const StepCost cost(s.shape, profile, s.topology, rate);  // The host's share at this rate.
    ASSIGN_OR_RETURN(SimResult r, Simulate(s.trace, s.replay, s.shape, cost, workload, options));
    const double m = static_cast<double>(r.moe_calls), l = static_cast<double>(r.layer_calls);
    out.moe.wait += r.moe.wait * m, out.moe.dispatch += r.moe.dispatch * m;
    out.moe.experts += r.moe.experts * m, out.moe.combine += r.moe.combine * m;
    out.attention_s += r.attention_s * l, out.srs_s += r.srs_s * l, out.sag_s += r.sag_s * l;
    out.step_s += r.step_s * r.steps;
    moe_calls += r.moe_calls, layer_calls += r.layer_calls, steps += r.steps;
    if (r.slo_attainment >= target_attainment) out.best_rate = std::max(out.best_rate, rate);
    out.points.push_back({rate, std::move(r)});
  }
  if (moe_calls > 0) {
    out.moe.wait /= moe_calls, out.moe.dispatch /= moe_calls, out.moe.experts /= moe_calls;
    out.moe.combine /= moe_calls;
  }
  if (layer_calls > 0)
    out.attention_s /= layer_calls, out.srs_s /= layer_calls, out.sag_s /= layer_calls;
  if (steps > 0) out.step_s /= steps;
  return out;
}

}  // namespace semmoe::planner::sim
