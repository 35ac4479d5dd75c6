#include "tools/simulate_synth.h"

#include <algorithm>
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
                                      {"layer_bias", params.layer_bias}}},
                                    {"compared_requests", compared},
                                    {"target", StatsJson(target)},
                                    {"achieved", StatsJson(planner::sim::MeasureRouting(first(t)))},
                                    {"out", o.out}};
  std::cout << j.dump() << "\n";
  return 0;
}

}  // namespace semmoe::tools
