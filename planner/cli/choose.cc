#include "planner/cli/choose.h"

#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "planner/placement/topology.h"
#include "planner/sim/cluster_profile.h"
#include "planner/store/placement_store.h"

namespace semmoe::planner::cli {
namespace {

double Field(const nlohmann::ordered_json& p, const char* key) { return p[key].get<double>(); }

// What activation's guard asks (PlacementStore::CheckPredictedNotSlower), from one prediction.
bool GuardPasses(const nlohmann::ordered_json& p) {
  return PlacementStore::WhySlowerThanVanilla(Field(p, "predicted_vs_vanilla"),
                                              Field(p, "predicted_max_rate_vs_vanilla"))
      .empty();
}

// Is `a` a better choice than `b`: one the guard passes beats one it refuses; then the shorter
// predicted MoE layer; within 0.5%, the higher max rate in SLO.
bool Better(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b) {
  if (GuardPasses(a) != GuardPasses(b)) return GuardPasses(a);
  const double ma = Field(a, "predicted_moe_layer_ms"), mb = Field(b, "predicted_moe_layer_ms");
  if (ma < mb * 0.995) return true;
  if (mb < ma * 0.995) return false;
  return Field(a, "predicted_max_rate_rps") > Field(b, "predicted_max_rate_rps");
}

std::string Summary(const nlohmann::ordered_json& p) {
  return absl::StrFormat("MoE layer %.3f ms, %.3fx vanilla's; max rate in SLO %.3fx vanilla's%s",
                         Field(p, "predicted_moe_layer_ms"), Field(p, "predicted_vs_vanilla"),
                         Field(p, "predicted_max_rate_vs_vanilla"),
                         GuardPasses(p) ? "" : " (activation would be refused)");
}

// The topology every candidate is predicted on: --topology of the prediction, else the build's,
// else the profile's nodes over the build's devices (one node where they do not divide).
absl::StatusOr<Topology> PredictionTopology(const BuildOptions& build,
                                            const PredictOptions& predict) {
  if (!predict.topology.empty()) return Topology::Parse(predict.topology);
  if (!build.topology.empty()) return Topology::FromFlag(build.topology);
  ASSIGN_OR_RETURN(const sim::ClusterProfile profile, sim::LoadClusterProfile(predict.cluster));
  const int m = static_cast<int>(profile.ranks_per_node.value);
  return build.devices > m && build.devices % m == 0 ? Topology::Nodes(build.devices / m, m)
                                                     : Topology::Flat(build.devices);
}

}  // namespace

absl::StatusOr<nlohmann::ordered_json> PredictVersion(const std::string& db, int64_t version,
                                                      const PredictOptions& options,
                                                      std::ostream& out,
                                                      sim::VanillaSweeps* vanilla) {
  if (!options.topology.empty() && !Topology::IsNodesSpec(options.topology)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cluster: the prediction's --topology must be NxM (got ", options.topology, ")"));
  }
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  absl::StatusOr<nlohmann::ordered_json> p =
      sim::PredictAgainstVanilla({.db = db,
                                  .version = version,
                                  .traces = options.traces,
                                  .cluster = options.cluster,
                                  .topology = options.topology},
                                 options.shape, vanilla);
  if (!p.ok()) {
    return absl::Status(p.status().code(),
                        absl::StrCat("predicting version ", version, ": ", p.status().message()));
  }
  RETURN_IF_ERROR(store->SetPrediction(version, (*p)["key"].get<std::string>(), p->dump()));
  out << absl::StrFormat(
      "predicted on %s (%s, router %s): MoE layer %.3f ms, %.3fx vanilla's %.3f ms; max rate in "
      "SLO %.3g req/s, %.3fx vanilla's\n",
      (*p)["key"].get<std::string>(), (*p)["mode"].get<std::string>(),
      (*p)["router"].get<std::string>(), Field(*p, "predicted_moe_layer_ms"),
      Field(*p, "predicted_vs_vanilla"), Field(*p, "vanilla_moe_layer_ms"),
      Field(*p, "predicted_max_rate_rps"), Field(*p, "predicted_max_rate_vs_vanilla"));
  if (absl::Status guard = store->CheckPredictedNotSlower(version); !guard.ok()) {
    out << "WARNING: " << guard.message() << "\n";
  }
  return *std::move(p);
}

absl::StatusOr<int64_t> BuildChosenByTime(const BuildOptions& build, const PredictOptions& given,
                                          std::ostream& out) {
  if (build.algo != "semantic") {
    return absl::InvalidArgumentError(
        absl::StrCat("choosing by predicted time varies the semantic solver's options; --algo is '",
                     build.algo, "' (give --choose=none to build and predict it alone)"));
  }
  if (build.relative_to > 0) {
    return absl::InvalidArgumentError(
        "choosing by predicted time builds fresh candidates; a re-plan (--relative_to) is built "
        "alone: give --choose=none");
  }
  ASSIGN_OR_RETURN(const Topology topology, PredictionTopology(build, given));
  if (topology.num_ranks() != build.devices) {
    return absl::InvalidArgumentError(absl::StrCat("--topology ", topology.Describe(), " has ",
                                                   topology.num_ranks(), " ranks; --devices is ",
                                                   build.devices));
  }
  PredictOptions predict = given;
  predict.topology = topology.Describe();  // One topology for every candidate and for vanilla.
  ASSIGN_OR_RETURN(trace::TraceSet trace, LoadTraces(build.traces));
  const std::string base = build.name.empty()
                               ? absl::StrCat(build.algo, "-", build.mode, "-g", build.devices)
                               : build.name;
  sim::VanillaSweeps vanilla;
  std::vector<Candidate> tried;

  // Builds, stores and predicts one candidate (its build's report kept for the chosen one).
  std::vector<std::string> reports;
  auto run = [&](std::string label, BuildOptions o) -> absl::StatusOr<size_t> {
    for (size_t i = 0; i < tried.size(); ++i) {
      if (tried[i].label == label) return i;  // The same options: built once.
    }
    o.name = absl::StrCat(base, ":", label);
    o.progress = nullptr;
    std::ostringstream report;
    ASSIGN_OR_RETURN(const int64_t version, BuildFrom(o, trace, report));
    std::ostringstream line;
    ASSIGN_OR_RETURN(nlohmann::ordered_json p,
                     PredictVersion(build.db, version, predict, line, &vanilla));
    out << absl::StrFormat("candidate %-22s version %d: %s\n", label, version, Summary(p));
    tried.push_back({std::move(label), std::move(o), version, std::move(p)});
    reports.push_back(report.str() + line.str());
    return tried.size() - 1;
  };
  auto label_of = [&](const std::string& where, int replicas, const std::string& balance) {
    std::string label = where;
    if (replicas > 0) absl::StrAppend(&label, "+r", replicas);
    if (!balance.empty()) absl::StrAppend(&label, "+", balance);
    return label;
  };
  auto best_of = [&](const std::vector<size_t>& ids) {
    size_t best = ids[0];
    for (size_t i : ids) {
      if (Better(tried[i].prediction, tried[best].prediction)) best = i;
    }
    return best;
  };

  // Axis 1, where: flat, node-aware (the node grouping alone) and with the node credit.
  const bool nodes = topology.num_nodes() > 1;
  const double credit = build.node_weight > 0 ? build.node_weight : 0.5;
  std::vector<size_t> ids;
  std::vector<std::pair<std::string, BuildOptions>> where;
  if (nodes) {
    BuildOptions flat = build, node = build, credited = build;
    flat.topology = "";
    flat.node_weight = 0;
    node.topology = credited.topology = topology.Describe();
    node.node_weight = 0;
    credited.node_weight = credit;
    where = {{"flat", flat}, {"node", node}, {absl::StrCat("credit", credit), credited}};
  } else {
    where = {{build.topology.empty() ? "flat" : "as-given", build}};
  }
  for (auto& [name, o] : where) {
    ASSIGN_OR_RETURN(size_t id, run(label_of(name, o.replicas, ""), o));
    ids.push_back(id);
  }
  size_t chosen = best_of(ids);
  const std::string chosen_where = tried[chosen].label.substr(0, tried[chosen].label.find('+'));

  // Axis 2, replicas: none, and --replicas (else 1).
  const int replicas = build.replicas > 0 ? build.replicas : 1;
  ids = {chosen};
  for (int r : {0, replicas}) {
    BuildOptions o = tried[chosen].build;
    o.replicas = r;
    absl::StatusOr<size_t> id = run(label_of(chosen_where, r, ""), o);
    if (!id.ok() && r > 0 && absl::IsInvalidArgument(id.status())) {
      out << "candidate " << label_of(chosen_where, r, "")
          << ": not built: " << id.status().message() << "\n";
      continue;
    }
    RETURN_IF_ERROR(id.status());
    ids.push_back(*id);
  }
  chosen = best_of(ids);

  // Axis 3 (DP): the expert-load cap — as given (auto: the balance curve's), 0.05, 0.1, 0.2.
  if (build.mode == "dp") {
    ids = {chosen};
    for (double eps : {0.05, 0.1, 0.2}) {
      BuildOptions o = tried[chosen].build;
      if (o.expert_balance_eps == eps) continue;
      o.expert_balance_eps = eps;
      ASSIGN_OR_RETURN(size_t id,
                       run(label_of(chosen_where, o.replicas, absl::StrFormat("eps%g", eps)), o));
      ids.push_back(id);
    }
    chosen = best_of(ids);
  }

  // EPLB beside: the same devices, hierarchical on the nodes, as many replicas as the choice.
  BuildOptions eplb_options = build;
  eplb_options.algo = "eplb";
  eplb_options.topology = nodes ? topology.Describe() : "";
  eplb_options.replicas = tried[chosen].build.replicas;
  eplb_options.name = absl::StrCat("eplb-", build.mode, "-g", build.devices, ":beside-", base);
  eplb_options.progress = nullptr;
  std::ostringstream eplb_report, eplb_line;
  ASSIGN_OR_RETURN(const int64_t eplb_version, BuildFrom(eplb_options, trace, eplb_report));
  ASSIGN_OR_RETURN(const nlohmann::ordered_json eplb,
                   PredictVersion(build.db, eplb_version, predict, eplb_line, &vanilla));
  out << absl::StrFormat("beside: eplb%-18s version %d: %s\n",
                         eplb_options.replicas > 0 ? absl::StrCat("+r", eplb_options.replicas) : "",
                         eplb_version, Summary(eplb));

  // The choice, stored with the chosen version's prediction.
  const Candidate& c = tried[chosen];
  nlohmann::ordered_json record = c.prediction;
  nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
  for (const Candidate& t : tried) {
    candidates.push_back(
        {{"label", t.label},
         {"version", t.version},
         {"predicted_moe_layer_ms", t.prediction["predicted_moe_layer_ms"]},
         {"predicted_vs_vanilla", t.prediction["predicted_vs_vanilla"]},
         {"predicted_max_rate_vs_vanilla", t.prediction["predicted_max_rate_vs_vanilla"]}});
  }
  record["chosen"] = c.label;
  record["candidates"] = candidates;
  record["eplb"] = {{"version", eplb_version},
                    {"replicas", eplb_options.replicas},
                    {"moe_layer_ms", eplb["predicted_moe_layer_ms"]},
                    {"eplb_vs_vanilla", eplb["predicted_vs_vanilla"]},
                    {"max_rate_vs_vanilla", eplb["predicted_max_rate_vs_vanilla"]}};
  const double vs_eplb =
      Field(c.prediction, "predicted_moe_layer_ms") / Field(eplb, "predicted_moe_layer_ms");
  record["predicted_vs_eplb"] = vs_eplb;
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(build.db));
  RETURN_IF_ERROR(store->SetPrediction(c.version, record["key"].get<std::string>(), record.dump()));

  out << reports[chosen];
  out << absl::StrFormat(
      "chosen: version %d (%s) of %d candidates, predicted on %s: %.3fx vanilla's MoE layer, "
      "%.3fx EPLB's\n",
      c.version, c.label, tried.size(), record["key"].get<std::string>(),
      Field(c.prediction, "predicted_vs_vanilla"), vs_eplb);
  if (!GuardPasses(c.prediction)) {
    out << "WARNING: no candidate is predicted within 2% of vanilla on this cluster; activation "
           "refuses them (serve vanilla, or --force)\n";
  } else if (Better(eplb, c.prediction) && GuardPasses(eplb)) {
    out << "WARNING: EPLB (version " << eplb_version
        << ") is predicted faster than every semantic candidate on this cluster\n";
  }
  return c.version;
}

}  // namespace semmoe::planner::cli
