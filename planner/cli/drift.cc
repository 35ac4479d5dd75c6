#include "planner/cli/drift.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "planner/affinity/token_affinity.h"
#include "planner/cli/commands.h"
#include "planner/eval/evaluate.h"
#include "planner/eval/schedule.h"
#include "planner/solver/tp_solver.h"
#include "planner/store/placement_store.h"

namespace semmoe::planner::cli {
namespace {

nlohmann::ordered_json At(const nlohmann::json& metrics, const char* key, size_t i) {
  if (!metrics.contains(key) || !metrics[key].is_array() || i >= metrics[key].size())
    return nullptr;
  return metrics[key][i];
}

}  // namespace

absl::StatusOr<nlohmann::ordered_json> DriftReport(const DriftOptions& o) {
  if (o.live.empty()) return absl::InvalidArgumentError("drift needs --traces (live traces)");
  absl::StatusOr<trace::TraceSet> loaded = LoadTraces(o.live);
  if (!loaded.ok()) {  // E.g. no tokens yet: say where live traces come from.
    return absl::Status(loaded.status().code(),
                        absl::StrCat("live traces: ", loaded.status().message(),
                                     " (engines write them with --sample_routing)"));
  }
  return DriftReportOn(o, *loaded);
}

absl::StatusOr<nlohmann::ordered_json> DriftReportOn(const DriftOptions& o,
                                                     const trace::TraceSet& live) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(o.db));
  ASSIGN_OR_RETURN(PlacementVersion v, store->Get(o.version));
  const Placement& p = v.placement;
  if (live.num_layers() != p.num_layers() ||
      static_cast<int>(live.header.num_experts) != p.num_experts()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the live traces are of ", live.num_layers(), " MoE layers × ", live.header.num_experts,
        " experts; version ", o.version, " places ", p.num_layers(), " × ", p.num_experts()));
  }
  auto tables = store->GetAffinityTables(o.version);
  if (!tables.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "version ", o.version, " has no affinity tables: its data rule cannot be replayed (",
        tables.status().message(), ")"));
  }
  ASSIGN_OR_RETURN(TokenAffinity affinity, TokenAffinity::Deserialize(*tables));
  RETURN_IF_ERROR(
      affinity.CheckMatches(p, absl::StrCat("version ", o.version, "'s stored affinity tables")));
  const nlohmann::json metrics = ParseJsonOrDiscarded(v.metrics_json);
  const std::string mode = AttentionModeOf(v);
  uint32_t vocab = 0;
  for (uint32_t t : live.tokens) vocab = std::max(vocab, t + 1);
  const int g = p.num_devices();
  Metrics m;
  if (mode == "tp") {
    ASSIGN_OR_RETURN(
        m, EvaluateTp(live, p,
                      SrsTokens(live, affinity, p, kSrsBatchTokens, nullptr, o.token_balance_eps)));
  } else {
    ASSIGN_OR_RETURN(
        m, EvaluateDp(live, p,
                      AffinityRequests(live, affinity.DpScores(p, vocab), g, o.token_balance_eps)));
  }
  const double planned =
      metrics.is_object() && metrics.contains("lar_affinity") && metrics["lar_affinity"].is_number()
          ? metrics["lar_affinity"].get<double>()
          : 0.0;
  // How the traffic itself moved: per layer, the total-variation distance between the live share
  // of activations per expert and the one the version was planned from; and the share of live
  // tokens its tables never saw.
  const int n = p.num_experts(), k = live.top_k();
  std::vector<double> shift(p.num_layers(), 0.0);
  for (int l = 0; l < p.num_layers(); ++l) {
    std::vector<double> share(n, 0.0);
    for (int64_t t = 0; t < live.num_tokens(); ++t) {
      for (int j = 0; j < k; ++j) share[live.Experts(t, l)[j]] += 1;
    }
    const double all = std::max<double>(1.0, static_cast<double>(live.num_tokens()) * k);
    for (int e = 0; e < n; ++e)
      shift[l] += 0.5 * std::abs(share[e] / all - affinity.Marginal(l)[e]);
  }
  int64_t unseen = 0;
  for (uint32_t t : live.tokens) unseen += affinity.Seen(t) ? 0 : 1;
  double mean_shift = 0;
  for (double s : shift) mean_shift += s / std::max(1, p.num_layers());
  nlohmann::ordered_json report = {
      {"version", o.version},
      {"mode", mode},
      {"live_requests", live.num_requests()},
      {"live_tokens", live.num_tokens()},
      {"planned_lar", planned},
      {"live_lar", m.lar},
      {"lar_drift", m.lar - planned},
      {"expert_shift", mean_shift},
      {"unseen_token_share",
       live.num_tokens() == 0 ? 0.0 : static_cast<double>(unseen) / live.num_tokens()},
      {"planned_expert_load", metrics.is_object() && metrics.contains("expert_load_imbalance")
                                  ? metrics["expert_load_imbalance"]
                                  : nlohmann::json(nullptr)},
      {"live_expert_load", m.expert_load_imbalance}};
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (int l = 0; l < p.num_layers(); ++l) {
    const nlohmann::ordered_json planned_lar = At(metrics, "lar_affinity_per_layer", l);
    layers.push_back(
        {{"layer", p.moe_layers()[l]},
         {"planned_lar", planned_lar},
         {"live_lar", m.lar_per_layer[l]},
         {"lar_drift", planned_lar.is_number()
                           ? nlohmann::ordered_json(m.lar_per_layer[l] - planned_lar.get<double>())
                           : nlohmann::ordered_json(nullptr)},
         {"expert_shift", shift[l]},
         {"planned_expert_load", At(metrics, "expert_load_imbalance_per_layer", l)},
         {"live_expert_load", m.expert_load_imbalance_per_layer[l]}});
  }
  report["layers"] = layers;
  return report;
}

absl::Status Drift(const DriftOptions& o, std::ostream& out) {
  ASSIGN_OR_RETURN(nlohmann::ordered_json r, DriftReport(o));
  if (o.json) {
    out << r.dump() << "\n";
    return absl::OkStatus();
  }
  auto num = [](const nlohmann::ordered_json& j) {
    return j.is_number() ? absl::StrFormat("%.4f", j.get<double>()) : std::string("-");
  };
  out << "version " << o.version << " (" << r["mode"].get<std::string>() << ") on "
      << r["live_requests"].get<int64_t>() << " live requests, " << r["live_tokens"].get<int64_t>()
      << " tokens: LAR " << num(r["live_lar"]) << " live vs " << num(r["planned_lar"])
      << " planned (drift " << num(r["lar_drift"]) << "); expert load "
      << num(r["live_expert_load"]) << " vs " << num(r["planned_expert_load"]) << "\n";
  out << absl::StrFormat(
      "traffic shift %s (expert shares, total variation from the plan's traffic), %.1f%% of the "
      "live tokens unseen by its tables\n",
      num(r["expert_shift"]), 100 * r["unseen_token_share"].get<double>());
  out << absl::StrFormat("%-6s %11s %8s %8s %14s %11s\n", "layer", "planned LAR", "live LAR",
                         "drift", "planned load", "live load");
  for (const auto& l : r["layers"]) {
    out << absl::StrFormat("%-6d %11s %8s %8s %14s %11s\n", l["layer"].get<int>(),
                           num(l["planned_lar"]), num(l["live_lar"]), num(l["lar_drift"]),
                           num(l["planned_expert_load"]), num(l["live_expert_load"]));
  }
  out << "(LAR: local activation ratio under the version's data rule; load: activations on the "
         "busiest device / the mean; planned: in-sample, from the traces it was built from)\n";
  return absl::OkStatus();
}

}  // namespace semmoe::planner::cli
