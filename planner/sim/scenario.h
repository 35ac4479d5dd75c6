// Scenario: one configuration for the scale model — a placement (a stored version, or vanilla),
// a routing trace replayed under it by planner eval's rules (the router's request → rank rule
// under DP, the token → rank rule under TP), a topology and the serving mode — and RunSweep, the
// serving loop at each rate of a sweep, as tools/loadgen sweeps the network lab.
#ifndef SEMMOE_PLANNER_SIM_SCENARIO_H_
#define SEMMOE_PLANNER_SIM_SCENARIO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/placement/placement.h"
#include "planner/placement/topology.h"
#include "planner/sim/cluster_profile.h"
#include "planner/sim/model_shape.h"
#include "planner/sim/replay.h"
#include "planner/sim/serving_sim.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner::sim {

struct ScenarioSpec {
  std::string db;       // Placement database (unused for vanilla).
  int64_t version = 0;  // 0: vanilla over `devices`.
  int devices = 0;      // Vanilla's devices (ignored for a version).
  std::vector<std::string> traces;
  std::string mode;  // dp or tp; empty: the version's (vanilla: dp).
  // DP: affinity (the router's semantic rule, online: the best-fitting rank whose tokens in
  // flight stay within 5% of the mean plus the request), least_loaded, round_robin (online, as
  // router/rebatch/assigner.h), or affinity_offline (planner eval's rule: capacity over the
  // whole trace's tokens), or time (router/rebatch/assigner.h's time rule, predicting with this
  // profile); empty: affinity when the version has tables, else round_robin.
  std::string router;
  // With router empty: under DP, the time rule where the version has tables (instead of affinity).
  bool prefer_time = false;
  int hosts = 0, ranks_per_host = 0;  // 0: the version's topology, else the profile's nodes.
  bool node_dedup = false;
  int tp_batch_tokens = 256;
};

struct Scenario {
  ModelShape shape;
  Placement placement = *Placement::Vanilla({0}, 1, 1);
  std::string name, algorithm, mode, router;
  int64_t version = 0;
  trace::TraceSet trace;
  Topology topology = *Topology::Flat(1);
  Replay replay;
  bool node_dedup = false;
  std::vector<std::vector<double>> fit;  // [request][rank]: the prompt's fit (affinity).
  // [request][rank]: the prompt's expected share of activations (time; empty without tables).
  std::vector<std::vector<double>> share;
};

// InvalidArgument / NotFound / FailedPrecondition naming what does not fit: a version that is
// not there, a model that does not match the trace, a topology of another size, affinity asked
// of a version without tables.
absl::StatusOr<Scenario> LoadScenario(const ScenarioSpec& spec, const ModelShape& shape,
                                      const ClusterProfile& profile);

// One sweep point per rate: `point_s` seconds of Poisson arrivals (at least one request), run on
// an idle cluster.
struct SweepPoint {
  double rate = 0;
  SimResult result;
};
struct SweepResult {
  std::vector<SweepPoint> points;
  MoeTime moe;  // Per MoE-layer call over all points.
  double attention_s = 0, srs_s = 0, sag_s = 0, step_s = 0;
  double best_rate = 0;  // The highest rate with SLO attainment ≥ target.
  double a2a_share() const {
    return moe.total() > moe.wait ? moe.a2a() / (moe.total() - moe.wait) : 0;
  }
};
absl::StatusOr<SweepResult> RunSweep(const Scenario& s, const ClusterProfile& profile,
                                     Workload workload, const ServingOptions& options,
                                     const std::vector<double>& rates, double point_s,
                                     double target_attainment = 0.9);

}  // namespace semmoe::planner::sim

#endif  // SEMMOE_PLANNER_SIM_SCENARIO_H_
