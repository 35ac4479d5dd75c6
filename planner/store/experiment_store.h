// A/B experiments over placement versions, in the planner's database: an experiment splits a
// model's traffic between arms, each serving one placement version with a share (percent,
// summing to 100). Status: draft → running → stopped. Arms are fixed once the experiment is
// created (triggers refuse edits); per-arm metrics are appended by whoever measures them (the
// router) as JSON snapshots.
//
// Thread-compatible, like PlacementStore; uses the PlacementStore's database (same schema list).
#ifndef SEMMOE_PLANNER_STORE_EXPERIMENT_STORE_H_
#define SEMMOE_PLANNER_STORE_EXPERIMENT_STORE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/store/placement_store.h"

namespace semmoe::planner {

struct ExperimentArm {
  std::string name;
  int64_t version = 0;
  int share_percent = 0;
  std::string latest_metrics_json;  // "" until metrics are recorded.
};

struct Experiment {
  int64_t id = 0;
  std::string model;
  std::string name;
  std::string status;  // "draft", "running" or "stopped".
  std::vector<ExperimentArm> arms;
};

// Why the arm's latest metrics do not measure its version — the router could not place its
// requests with the version's tables (the metrics' "tables_error") — or "" if they do.
std::string NotRoutedAsPlanned(const ExperimentArm& arm);

// Each arm's measured MoE layer (its latest metrics' "moe_layer_ms", the router's ArmStats)
// over the vanilla arm's — the arm whose version was built with --algo vanilla. Arms without a
// measure, the vanilla arm itself, and experiments without a vanilla arm (or more than one)
// have none.
struct MeasuredAgainstVanilla {
  std::string vanilla_arm;                  // "" when there is none.
  std::map<std::string, double> moe_ratio;  // Arm → its MoE layer over the vanilla arm's.
};

class ExperimentStore {
 public:
  // REQUIRES: `placements` outlives this (its database holds the experiment tables).
  explicit ExperimentStore(PlacementStore& placements) : placements_(placements) {}

  // InvalidArgument unless there are ≥ 2 arms with distinct names, shares in [1, 100] summing
  // to 100, and versions of `model`; NotFound for an unknown model or version.
  absl::StatusOr<int64_t> Create(const std::string& model, const std::string& name,
                                 const std::vector<ExperimentArm>& arms);
  // draft → running; at most one running experiment per model (FailedPrecondition otherwise).
  absl::Status Start(int64_t id);
  // running → stopped.
  absl::Status Stop(int64_t id);
  // Activates `arm`'s placement version (the previous active one retires) and stops the
  // experiment if it runs; returns that version. NotFound for an unknown experiment or arm;
  // FailedPrecondition for a draft (nothing was measured) or an arm not routed as planned.
  // Refused (FailedPrecondition) when the arm's version is predicted slower than vanilla
  // (PlacementStore::CheckPredictedNotSlower), or its MoE layer was measured more than 2%
  // slower than the vanilla arm's (MeasuredVsVanilla), unless `force`.
  absl::StatusOr<int64_t> Promote(int64_t id, const std::string& arm, bool force = false);
  absl::StatusOr<Experiment> Get(int64_t id);
  absl::StatusOr<MeasuredAgainstVanilla> MeasuredVsVanilla(const Experiment& e);
  absl::StatusOr<std::vector<Experiment>> List(const std::string& model);
  // Appends a metrics snapshot (a JSON object) for an arm of a running experiment.
  absl::Status RecordArmMetrics(int64_t id, const std::string& arm, const std::string& json);

 private:
  PlacementStore& placements_;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_STORE_EXPERIMENT_STORE_H_
