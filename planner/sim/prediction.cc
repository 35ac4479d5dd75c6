#include "planner/sim/prediction.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "planner/placement/topology.h"
#include "planner/sim/cluster_profile.h"
#include "planner/sim/scenario.h"

namespace semmoe::planner::sim {

absl::StatusOr<nlohmann::ordered_json> PredictAgainstVanilla(const PredictionSpec& spec,
                                                             const ModelShape& shape,
                                                             VanillaSweeps* vanilla_sweeps) {
  ASSIGN_OR_RETURN(const ClusterProfile profile, LoadClusterProfile(spec.cluster));
  ScenarioSpec version{.db = spec.db, .version = spec.version, .traces = spec.traces};
  if (!spec.topology.empty()) {
    ASSIGN_OR_RETURN(const Topology topo, Topology::Parse(spec.topology));
    version.hosts = topo.num_nodes();
    version.ranks_per_host = topo.num_ranks() / topo.num_nodes();
  }
  version.node_dedup = true;   // Taken where there are several nodes, for both.
  version.prefer_time = true;  // The version's own rule: under DP the time rule with tables.
  ASSIGN_OR_RETURN(const Scenario s, LoadScenario(version, shape, profile));
  const int g = s.placement.num_devices();
  std::vector<double> rates;
  for (double f : {0.5, 1.0, 1.5, 2.0, 2.5}) rates.push_back(s.mode == "tp" ? f * 4 : f * g);
  const Workload workload{.output_tokens = spec.output_tokens};
  ASSIGN_OR_RETURN(const SweepResult ours,
                   RunSweep(s, profile, workload, ServingOptions{}, rates, spec.point_s));

  // Vanilla over the same devices, topology and mode, round-robin (swept once per key).
  const std::string vanilla_key =
      absl::StrCat(profile.name, " ", s.topology.Describe(), " ", s.mode, " ", spec.output_tokens,
                   " ", spec.point_s, " ", absl::StrJoin(spec.traces, ","));
  VanillaSweeps local;
  VanillaSweeps& sweeps = vanilla_sweeps != nullptr ? *vanilla_sweeps : local;
  auto cached = sweeps.find(vanilla_key);
  if (cached == sweeps.end()) {
    ScenarioSpec vanilla = version;
    vanilla.version = 0;
    vanilla.devices = g;
    vanilla.mode = s.mode;
    vanilla.router = "round_robin";
    vanilla.hosts = s.topology.num_nodes();
    vanilla.ranks_per_host = s.topology.num_ranks() / s.topology.num_nodes();
    ASSIGN_OR_RETURN(const Scenario v, LoadScenario(vanilla, shape, profile));
    ASSIGN_OR_RETURN(SweepResult swept,
                     RunSweep(v, profile, workload, ServingOptions{}, rates, spec.point_s));
    cached = sweeps.emplace(vanilla_key, std::move(swept)).first;
  }
  const SweepResult& base = cached->second;
  const double ms = 1e3;
  const std::string key = absl::StrCat(profile.name, " ", s.topology.Describe());
  return nlohmann::ordered_json{
      {"key", key},
      {"cluster", profile.name},
      {"topology", s.topology.Describe()},
      {"mode", s.mode},
      {"router", s.router},
      {"node_dedup", s.topology.num_nodes() > 1},
      {"predicted_moe_layer_ms", ours.moe.total() * ms},
      {"vanilla_moe_layer_ms", base.moe.total() * ms},
      {"predicted_vs_vanilla", base.moe.total() > 0 ? ours.moe.total() / base.moe.total() : 0},
      {"predicted_max_rate_rps", ours.best_rate},
      {"vanilla_max_rate_rps", base.best_rate},
      {"predicted_max_rate_vs_vanilla", base.best_rate > 0 ? ours.best_rate / base.best_rate : 0},
      {"rates", rates},
      {"traces", spec.traces}};
}

}  // namespace semmoe::planner::sim
