#include "planner/cli/experiments.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "planner/store/experiment_store.h"
#include "planner/store/placement_store.h"

namespace semmoe::planner::cli {
namespace {

std::string Arms(const Experiment& e) {
  std::string out;
  for (const ExperimentArm& a : e.arms) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", a.name, " = version ", a.version, " (",
                    a.share_percent, "%)");
  }
  return out;
}

}  // namespace

absl::StatusOr<int64_t> ExperimentCreate(const std::string& db, const std::string& model,
                                         const std::string& name, int64_t a, int64_t b, int share_b,
                                         std::ostream& out) {
  if (share_b < 1 || share_b > 99) {
    return absl::InvalidArgumentError(
        absl::StrCat("--share is arm B's percent of the traffic, 1 to 99; got ", share_b));
  }
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  ExperimentStore experiments(*store);
  ASSIGN_OR_RETURN(int64_t id,
                   experiments.Create(model, name.empty() ? absl::StrCat("v", a, " vs v", b) : name,
                                      {{"A", a, 100 - share_b}, {"B", b, share_b}}));
  ASSIGN_OR_RETURN(Experiment e, experiments.Get(id));
  out << "experiment " << id << " (" << e.name << ", draft): " << Arms(e) << "\n";
  return id;
}

absl::Status ExperimentStart(const std::string& db, int64_t id, std::ostream& out) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  ExperimentStore experiments(*store);
  RETURN_IF_ERROR(experiments.Start(id));
  out << "experiment " << id << " is running\n";
  return absl::OkStatus();
}

absl::Status ExperimentStop(const std::string& db, int64_t id, std::ostream& out) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  ExperimentStore experiments(*store);
  RETURN_IF_ERROR(experiments.Stop(id));
  out << "experiment " << id << " is stopped\n";
  return absl::OkStatus();
}

absl::Status ExperimentPromote(const std::string& db, int64_t id, const std::string& arm,
                               std::ostream& out, bool force) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  ExperimentStore experiments(*store);
  ASSIGN_OR_RETURN(int64_t version, experiments.Promote(id, arm, force));
  out << "experiment " << id << ": arm " << arm << " promoted; version " << version
      << " is active\n";
  return absl::OkStatus();
}

absl::Status ExperimentShow(const std::string& db, int64_t id, std::ostream& out) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  ExperimentStore experiments(*store);
  ASSIGN_OR_RETURN(Experiment e, experiments.Get(id));
  ASSIGN_OR_RETURN(const MeasuredAgainstVanilla measured, experiments.MeasuredVsVanilla(e));
  nlohmann::ordered_json arms = nlohmann::ordered_json::array();
  for (const ExperimentArm& a : e.arms) {
    nlohmann::ordered_json arm = {
        {"name", a.name}, {"version", a.version}, {"share_percent", a.share_percent}};
    arm["metrics"] = a.latest_metrics_json.empty()
                         ? nlohmann::ordered_json()
                         : ParseOrderedJsonOrDiscarded(a.latest_metrics_json);
    if (auto r = measured.moe_ratio.find(a.name); r != measured.moe_ratio.end()) {
      arm["moe_vs_vanilla_arm"] = r->second;
      arm["measured_slower_than_vanilla"] = r->second > PlacementStore::kSlowerThanVanilla;
    }
    arms.push_back(arm);
  }
  out << nlohmann::ordered_json({{"id", e.id},
                                 {"model", e.model},
                                 {"name", e.name},
                                 {"status", e.status},
                                 {"vanilla_arm", measured.vanilla_arm},
                                 {"arms", arms}})
             .dump(2)
      << "\n";
  return absl::OkStatus();
}

absl::Status ExperimentList(const std::string& db, const std::string& model, std::ostream& out) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  ExperimentStore experiments(*store);
  ASSIGN_OR_RETURN(std::vector<Experiment> all, experiments.List(model));
  for (const Experiment& e : all) {
    out << absl::StrFormat("%-5d %-8s %-24s %s\n", e.id, e.status, e.name, Arms(e));
  }
  return absl::OkStatus();
}

}  // namespace semmoe::planner::cli
