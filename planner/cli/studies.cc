#include "planner/cli/studies.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/cli/commands.h"
#include "planner/eval/schedule.h"
#include "planner/solver/balance_curve.h"
#include "planner/solver/dp_solver.h"
#include "planner/solver/tp_solver.h"

namespace semmoe::planner::cli {
namespace {

using trace::TraceSet;

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ReadDomains(const std::string& path) {
  std::map<std::string, std::string> domains;
  if (path.empty()) return domains;
  // One line per request: a data file, not a configuration file.
  absl::StatusOr<std::string> text = ReadFlagFile("domains", path, kMaxDataFileBytes);
  if (!text.ok()) return text.status();
  int number = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++number;
    if (line.find_first_not_of(" \t\r") == absl::string_view::npos) continue;
    const nlohmann::json j = ParseJsonOrDiscarded(line);
    if (j.is_discarded() || !j.is_object() || !j.contains("id") || !j.contains("domain") ||
        !j["domain"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", number, ": needs a JSON object with \"id\" and \"domain\" (a string)"));
    }
    domains[j["id"].is_string() ? j["id"].get<std::string>() : j["id"].dump()] =
        j["domain"].get<std::string>();
  }
  return domains;
}

namespace {

// The trace's requests by domain, in first-seen order of the domains.
std::vector<std::pair<std::string, TraceSet>> SplitByDomain(
    const TraceSet& trace, const std::map<std::string, std::string>& domains) {
  std::vector<std::pair<std::string, TraceSet>> parts;
  std::map<std::string, size_t> index;
  for (int r = 0; r < trace.num_requests(); ++r) {
    const std::string& name = trace.request_names[r];
    auto it = domains.find(name);
    const std::string domain =
        it != domains.end() ? it->second : name.substr(0, name.find_first_of("-@"));
    auto [slot, added] = index.emplace(domain, parts.size());
    if (added) {
      TraceSet part;
      part.header = trace.header;
      parts.emplace_back(domain, std::move(part));
    }
    // Same shape as the source trace, so copying cannot fail.
    (void)parts[slot->second].second.CopyRequest(trace, r);
  }
  return parts;
}

}  // namespace

absl::Status Pareto(const StudyOptions& o, std::ostream& out) {
  if (o.profile.empty()) return absl::InvalidArgumentError("--pareto needs --profile");
  ASSIGN_OR_RETURN(TraceSet profile, LoadTraces(o.profile));
  ASSIGN_OR_RETURN(TraceSet heldout, LoadTraces(o.traces));
  ASSIGN_OR_RETURN(BalanceCurve curve, TraceBalanceCurve(profile,
                                                         {.num_devices = o.devices,
                                                          .token_balance_eps = o.token_balance_eps,
                                                          .seed = o.seed,
                                                          .paper_start = true},
                                                         {.num_devices = o.devices,
                                                          .token_balance_eps = o.token_balance_eps,
                                                          .link_cost = o.link_cost,
                                                          .balance_groups = o.balance_groups,
                                                          .seed = o.seed}));
  const TokenAffinity affinity = BuildTokenAffinity(profile);
  const std::vector<int> layers(heldout.header.moe_layers.begin(), heldout.header.moe_layers.end());
  ASSIGN_OR_RETURN(Placement vanilla,
                   Placement::Vanilla(layers, heldout.header.num_experts, o.devices));
  ASSIGN_OR_RETURN(Metrics base,
                   EvaluateDp(heldout, vanilla, RoundRobinRequests(heldout, o.devices),
                              {.link_cost = o.link_cost}));
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (size_t i = 0; i < curve.points.size(); ++i) {
    const BalancePoint& p = curve.points[i];
    ASSIGN_OR_RETURN(Metrics held, EvaluateRouterRule(heldout, affinity, p.placement,
                                                      o.token_balance_eps, o.link_cost));
    rows.push_back({{"expert_balance_eps", p.eps},
                    {"chosen", static_cast<int>(i) == curve.chosen},
                    {"profile_lar", p.profile.lar},
                    {"profile_expert_load_imbalance", p.profile.expert_load_imbalance},
                    {"profile_moe_time", p.profile.moe_time_per_token},
                    {"validation_moe_time", p.validation_time},
                    {"wins_every_fold", p.wins_every_fold},
                    {"lar", held.lar},
                    {"expert_load_imbalance", held.expert_load_imbalance},
                    {"moe_time_vs_vanilla", held.moe_time_per_token / base.moe_time_per_token}});
  }
  // Pareto-optimal on the held-out traces: no other point has both more LAR and less imbalance.
  for (auto& r : rows) {
    bool dominated = false;
    for (const auto& s : rows) {
      dominated |=
          s["lar"].get<double>() >= r["lar"].get<double>() &&
          s["expert_load_imbalance"].get<double>() <= r["expert_load_imbalance"].get<double>() &&
          (s["lar"] != r["lar"] || s["expert_load_imbalance"] != r["expert_load_imbalance"]);
    }
    r["pareto"] = !dominated;
  }
  if (o.json) {
    out << rows.dump() << "\n";
    return absl::OkStatus();
  }
  out << absl::StrFormat(
      "DP, G=%d, link cost %.2f expert rows per exchanged row, balance groups %d; held-out "
      "vanilla + round-robin: LAR %.4f, imbalance %.3f\n",
      o.devices, o.link_cost, o.balance_groups, base.lar, base.expert_load_imbalance);
  out << "(LAR, imbalance, time: on --traces; valid. time: per token over the profile's folds, "
         "each planned without the cluster it is timed on; robust: beats no cap on every fold)\n";
  out << absl::StrFormat("%-10s %12s %12s %12s %12s %12s %12s\n", "cap", "profile LAR",
                         "profile imb", "LAR", "imbalance", "time/vanilla", "valid. time");
  for (const auto& r : rows) {
    const double eps = r["expert_balance_eps"].get<double>();
    out << absl::StrFormat(
        "%-10s %12.4f %12.3f %12.4f %12.3f %12.3f %12.2f  %s%s%s\n",
        eps < 0 ? std::string("off") : absl::StrFormat("%.2f", eps), r["profile_lar"].get<double>(),
        r["profile_expert_load_imbalance"].get<double>(), r["lar"].get<double>(),
        r["expert_load_imbalance"].get<double>(), r["moe_time_vs_vanilla"].get<double>(),
        r["validation_moe_time"].get<double>(), r["pareto"].get<bool>() ? "pareto" : "-",
        eps >= 0 && r["wins_every_fold"].get<bool>() ? " robust" : "",
        r["chosen"].get<bool>() ? " (chosen)" : "");
  }
  return absl::OkStatus();
}

absl::Status ZeroShot(const StudyOptions& o, std::ostream& out) {
  if (o.profile.empty()) return absl::InvalidArgumentError("--zero_shot needs --profile");
  ASSIGN_OR_RETURN(TraceSet profile, LoadTraces(o.profile));
  ASSIGN_OR_RETURN(TraceSet heldout, LoadTraces(o.traces));
  ASSIGN_OR_RETURN(auto domains, ReadDomains(o.domains));
  auto planned_on = SplitByDomain(profile, domains);
  planned_on.emplace_back("all", std::move(profile));
  auto served = SplitByDomain(heldout, domains);
  served.emplace_back("all", std::move(heldout));
  nlohmann::ordered_json cells = nlohmann::ordered_json::array();
  for (const auto& [from, part] : planned_on) {
    DpSolverOptions solver{
        .num_devices = o.devices, .token_balance_eps = o.token_balance_eps, .seed = o.seed};
    ASSIGN_OR_RETURN(Placement tp, SolveTp(part, solver));
    solver.paper_start = true;  // As `planner build` plans DP.
    ASSIGN_OR_RETURN(DpSolution dp, SolveDp(part, solver));
    const TokenAffinity affinity = BuildTokenAffinity(part);
    for (const auto& [to, target] : served) {
      ASSIGN_OR_RETURN(Metrics d, EvaluateRouterRule(target, affinity, dp.placement,
                                                     o.token_balance_eps, o.link_cost));
      ASSIGN_OR_RETURN(Metrics t, EvaluateTp(target, tp,
                                             SrsTokens(target, affinity, tp, kSrsBatchTokens,
                                                       nullptr, o.token_balance_eps)));
      cells.push_back({{"profile", from},
                       {"profile_requests", part.num_requests()},
                       {"evaluated", to},
                       {"evaluated_requests", target.num_requests()},
                       {"dp_lar", d.lar},
                       {"tp_lar_srs", t.lar}});
    }
  }
  if (o.json) {
    out << cells.dump() << "\n";
    return absl::OkStatus();
  }
  for (const char* key : {"dp_lar", "tp_lar_srs"}) {
    out << (std::string(key) == "dp_lar" ? "DP LAR (router rule)" : "TP LAR (SRS rule)")
        << absl::StrFormat(", G=%d: rows planned on a domain's profile, columns served\n",
                           o.devices);
    out << absl::StrFormat("%-16s", "profile \\ served");
    for (const auto& [to, target] : served) out << absl::StrFormat(" %10s", to);
    out << "\n";
    size_t cell = 0;
    for (const auto& [from, part] : planned_on) {
      out << absl::StrFormat("%-16s", absl::StrCat(from, " (", part.num_requests(), ")"));
      for (size_t i = 0; i < served.size(); ++i, ++cell) {
        out << absl::StrFormat(" %10.4f", cells[cell][key].get<double>());
      }
      out << "\n";
    }
  }
  return absl::OkStatus();
}

}  // namespace semmoe::planner::cli
