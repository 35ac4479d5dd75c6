#include "tools/simulate_synth.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "planner/cli/commands.h"
#include "planner/cli/studies.h"
#include "planner/sim/routing_stats.h"
#include "planner/sim/synthetic_router.h"
#include "planner/solver/dp_solver.h"
#include "planner/trace/trace_writer.h"

namespace semmoe::tools {
namespace {

using planner::sim::RoutingStats;
using planner::sim::SyntheticParams;

nlohmann::ordered_json StatsJson(const RoutingStats& s) {
  return {{"popularity_cv", s.popularity_cv},
          {"token_lift", s.token_lift},
          {"request_lift", s.request_lift},
          {"layer_lift", s.layer_lift}};
}

absl::Status Write(const planner::trace::TraceSet& t, const std::string& path) {
  ASSIGN_OR_RETURN(auto writer, planner::trace::TraceWriter::Create(path, t.header));
  const int lk = t.num_layers() * t.top_k();
  std::vector<int32_t> experts(lk);
  for (int r = 0; r < t.num_requests(); ++r) {
    ASSIGN_OR_RETURN(uint64_t id, writer->AddRequest(t.request_names[r]));
    for (int64_t tok = t.request_begin[r]; tok < t.request_begin[r + 1]; ++tok) {
      for (int i = 0; i < lk; ++i) experts[i] = t.experts[tok * lk + i];
      RETURN_IF_ERROR(writer->AddToken(id, static_cast<uint32_t>(tok - t.request_begin[r]),
                                       t.tokens[tok], experts, {}));
    }
  }
  return writer->Close();
}

// The paper's setting for a target shape (its reported LAR at EP 4 on
// DeepSeek-V2-Lite and Qwen3-30B-A3B): DeepSeek-V2-Lite's 64 routed experts, top-6 for
// DeepSeek-family targets, Qwen3-30B-A3B's 128, top-8 otherwise; 8 layers (the statistic is a
// mean over layers).
planner::sim::SyntheticShape PaperShape(const planner::sim::ModelShape& target, uint32_t vocab,
                                        std::string* name) {
  const bool deepseek = target.name.find("deepseek") != std::string::npos;
  *name = deepseek ? "deepseek-v2-lite (64 experts, top-6)" : "qwen3-30b-a3b (128 experts, top-8)";
  return {.layers = 8, .experts = deepseek ? 64 : 128, .top_k = deepseek ? 6 : 8, .vocab = vocab};
}

struct PaperLar {
  double semantic = 0, vanilla = 0;
};

// In-sample DP LAR at EP 4 of the planner's co-schedule (planner/solver/dp_solver.h, its
// in-sample schedule) and of vanilla (experts in contiguous blocks, requests round-robin).
absl::StatusOr<PaperLar> MeasurePaperLar(const planner::trace::TraceSet& t, uint64_t seed) {
  constexpr int kDevices = 4;
  ASSIGN_OR_RETURN(
      planner::DpSolution dp,
      planner::SolveDp(t,
                       {.num_devices = kDevices, .starts = 2, .seed = seed, .router_rounds = 0}));
  PaperLar out{.semantic = dp.lar};
  const int lk = t.num_layers() * t.top_k(),
            per = static_cast<int>(t.header.num_experts) / kDevices;
  int64_t local = 0, all = 0;
  for (int r = 0; r < t.num_requests(); ++r) {
    for (int64_t tok = t.request_begin[r]; tok < t.request_begin[r + 1]; ++tok) {
      for (int i = 0; i < lk; ++i) {
        local += t.experts[tok * lk + i] / per == r % kDevices;
        ++all;
      }
    }
  }
  out.vanilla = all > 0 ? static_cast<double>(local) / all : 0;
  return out;
}

}  // namespace

absl::StatusOr<int> SynthTrace(const planner::sim::ModelShape& shape, const SynthOptions& o) {
  if (o.like.empty() || o.out.empty()) {
    return absl::InvalidArgumentError("give synth --like TRACE and --out OUT.trace");
  }
  ASSIGN_OR_RETURN(planner::trace::TraceSet like, planner::cli::LoadTraces(o.like));
  if (like.num_requests() < 2) return absl::InvalidArgumentError("--like needs 2+ requests");

  // The source requests (cycled to --requests) and their domains.
  ASSIGN_OR_RETURN(auto labels, planner::cli::ReadDomains(o.domains));
  std::map<std::string, int> index;  // The domains seen.
  planner::trace::TraceSet source;
  source.header = like.header;
  std::vector<int> domains;
  const int64_t n = o.requests > 0 ? o.requests : like.num_requests();
  const int64_t available = like.num_requests();
  for (int64_t i = 0; i < n; ++i) {
    // Fewer than the like traces hold: spread evenly over them (traces are often grouped by
    // domain); more: cycled.
    const int r = static_cast<int>(n <= available ? i * available / n : i % available);
    RETURN_IF_ERROR(source.CopyRequest(like, r));
    if (i >= like.num_requests()) {
      source.request_names.back() = absl::StrCat(like.request_names[r], "#", i);
    }
    const std::string& name = like.request_names[r];
    auto it = labels.find(name);
    const std::string domain =
        it != labels.end() ? it->second : name.substr(0, name.find_first_of("-@"));
    // A stable number per domain name (FNV-1a, 64 slots), so that traces generated apart (a
    // profile and a held-out set) give one domain the same experts.
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : domain) h = (h ^ c) * 1099511628211ULL;
    domains.push_back(static_cast<int>(h % 64));
    index.emplace(domain, 0);
  }

  // The statistics depend on the sample's size (how often ids repeat): the target, the fit and
  // the achieved figures all look at the first `compared` requests.
  const int compared = static_cast<int>(std::min<int64_t>({n, like.num_requests(), 400}));
  auto first = [&](const planner::trace::TraceSet& t) {
    planner::trace::TraceSet cut;
    cut.header = t.header;
    for (int r = 0; r < compared; ++r) (void)cut.CopyRequest(t, r);  // Same shape: cannot fail.
    return cut;
  };
  const RoutingStats target = planner::sim::MeasureRouting(first(source));
  const planner::sim::SyntheticShape target_shape{.layers = shape.num_moe_layers(),
                                                  .experts = shape.num_experts,
                                                  .top_k = shape.top_k,
                                                  .vocab = static_cast<uint32_t>(shape.vocab)};
  SyntheticParams params;
  if (!o.params.empty()) {
    const std::vector<std::string> parts = absl::StrSplit(o.params, ',');
    double* fields[] = {&params.popularity_skew, &params.token_bias, &params.domain_bias,
                        &params.layer_bias};
    if (parts.size() != 4) return absl::InvalidArgumentError("--params needs 4 numbers");
    for (int i = 0; i < 4; ++i) {
      if (!absl::SimpleAtod(parts[i], fields[i]) || !(*fields[i] >= 0) ||
          !(*fields[i] <= planner::sim::kMaxSyntheticParam)) {
        return absl::InvalidArgumentError(absl::StrCat("--params: \"", parts[i],
                                                       "\" is not a number from 0 to ",
                                                       planner::sim::kMaxSyntheticParam));
      }
    }
  } else {
    ASSIGN_OR_RETURN(params, planner::sim::FitSynthetic(source, domains, target_shape, target,
                                                        o.seed, {}, compared));
  }
  // The locality asked for.
  nlohmann::ordered_json calibration = {{"calibrate", o.calibrate}};
  if (o.calibrate == "none") {
    params.token_bias = params.domain_bias = params.layer_bias = 0;
  } else if (o.calibrate == "paper") {
    std::string paper_name;
    const planner::sim::SyntheticShape paper = PaperShape(shape, target_shape.vocab, &paper_name);
    planner::trace::TraceSet cut;  // The fit's sample: the first `compared` requests.
    cut.header = source.header;
    std::vector<int> cut_domains;
    for (int r = 0; r < compared; ++r) {
      RETURN_IF_ERROR(cut.CopyRequest(source, r));
      cut_domains.push_back(domains[r]);
    }
    // The knob is the domain bias — a request's own experts, what request placement lives on
    // (the token and layer biases raise the LAR of no placement: a token's home experts are a
    // hash of its id, the same whichever request holds it). Bisection on it for kPaperLar: the
    // LAR rises with it.
    const SyntheticParams fitted = params;
    auto at = [&](double domain_bias) -> absl::StatusOr<PaperLar> {
      SyntheticParams p = fitted;
      p.domain_bias = domain_bias;
      ASSIGN_OR_RETURN(planner::trace::TraceSet t,
                       planner::sim::GenerateRouting(cut, cut_domains, paper, p, o.seed));
      return MeasurePaperLar(t, o.seed);
    };
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    double lo = 0, hi = planner::sim::kMaxSyntheticParam, bias = fitted.domain_bias;
    PaperLar lar;
    for (int i = 0; i < 12; ++i) {
      ASSIGN_OR_RETURN(lar, at(bias));
      steps.push_back({{"domain_bias", bias}, {"lar", lar.semantic}});
      if (std::abs(lar.semantic - kPaperLar) <= 0.01) break;
      (lar.semantic < kPaperLar ? lo : hi) = bias;
      bias = (lo + hi) / 2;
    }
    bias = steps.back()["domain_bias"].get<double>();
    params.domain_bias = bias;
    calibration["paper_setting"] = paper_name;
    calibration["domain_bias"] = bias;
    calibration["semantic_lar_ep4"] = lar.semantic;
    calibration["vanilla_lar_ep4"] = lar.vanilla;
    calibration["target_lar"] = {kPaperLarLow, kPaperLarHigh};
    calibration["within_target"] = lar.semantic >= kPaperLarLow && lar.semantic <= kPaperLarHigh;
    calibration["steps"] = steps;
  } else if (o.calibrate != "trained") {
    return absl::InvalidArgumentError(
        absl::StrCat("--calibrate ", o.calibrate, ": expected trained, paper or none"));
  }
  if (!o.node_limit.empty()) {
    const std::vector<std::string> parts = absl::StrSplit(o.node_limit, ':');
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &params.groups) ||
        !absl::SimpleAtoi(parts[1], &params.top_groups)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--node_limit ", o.node_limit, ": expected GROUPS:TOP (DeepSeek-V3: 8:4)"));
    }
  }
  ASSIGN_OR_RETURN(planner::trace::TraceSet t,
                   planner::sim::GenerateRouting(source, domains, target_shape, params, o.seed));
  RETURN_IF_ERROR(Write(t, o.out));
  const nlohmann::ordered_json j = {{"shape", shape.name},
                                    {"moe_layers", target_shape.layers},
                                    {"experts", target_shape.experts},
                                    {"top_k", target_shape.top_k},
                                    {"vocab", target_shape.vocab},
                                    {"requests", t.num_requests()},
                                    {"tokens", t.num_tokens()},
                                    {"domains", index.size()},
                                    {"params",
                                     {{"popularity_skew", params.popularity_skew},
                                      {"token_bias", params.token_bias},
                                      {"domain_bias", params.domain_bias},
                                      {"layer_bias", params.layer_bias},
                                      {"groups", params.groups},
                                      {"top_groups", params.top_groups}}},
                                    {"calibration", calibration},
                                    {"compared_requests", compared},
                                    {"target", StatsJson(target)},
                                    {"achieved", StatsJson(planner::sim::MeasureRouting(first(t)))},
                                    {"out", o.out}};
  std::cout << j.dump() << "\n";
  return 0;
}

}  // namespace semmoe::tools
