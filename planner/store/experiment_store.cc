#include "planner/store/experiment_store.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace semmoe::planner {

absl::StatusOr<int64_t> ExperimentStore::Create(const std::string& model, const std::string& name,
                                                const std::vector<ExperimentArm>& arms) {
  if (arms.size() < 2) return absl::InvalidArgumentError("an experiment needs at least 2 arms");
  int total = 0;
  std::set<std::string> names;
  for (const ExperimentArm& arm : arms) {
    if (arm.name.empty() || !names.insert(arm.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("arm names must be distinct and non-empty ('", arm.name, "')"));
    }
    if (arm.share_percent < 1 || arm.share_percent > 100) {
      return absl::InvalidArgumentError(
          absl::StrCat("arm '", arm.name, "': share ", arm.share_percent, " is not in [1, 100]"));
    }
    total += arm.share_percent;
  }
  if (total != 100) {
    return absl::InvalidArgumentError(absl::StrCat("arm shares sum to ", total, ", not 100"));
  }
  Database& db = placements_.database();
  ASSIGN_OR_RETURN(auto tx, Transaction::Begin(db));
  ASSIGN_OR_RETURN(Statement find, db.Prepare("SELECT id FROM models WHERE name = ?"));
  RETURN_IF_ERROR(find.BindText(1, model));
  ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("unknown model '", model, "'"));
  const int64_t model_id = find.ColumnInt(0);
  for (const ExperimentArm& arm : arms) {
    ASSIGN_OR_RETURN(Statement version,
                     db.Prepare("SELECT model_id FROM placements WHERE version = ?"));
    RETURN_IF_ERROR(version.BindInt(1, arm.version));
    ASSIGN_OR_RETURN(bool exists, version.Step());
    if (!exists) {
      return absl::NotFoundError(
          absl::StrCat("arm '", arm.name, "': no placement version ", arm.version));
    }
    if (version.ColumnInt(0) != model_id) {
      return absl::InvalidArgumentError(absl::StrCat("arm '", arm.name, "': version ", arm.version,
                                                     " is not a '", model, "' placement"));
    }
  }
  ASSIGN_OR_RETURN(Statement insert,
                   db.Prepare("INSERT INTO experiments (model_id, name, status, created_at) "
                              "VALUES (?, ?, 'draft', ?)"));
  RETURN_IF_ERROR(insert.BindInt(1, model_id));
  RETURN_IF_ERROR(insert.BindText(2, name));
  RETURN_IF_ERROR(insert.BindInt(3, absl::ToUnixMicros(placements_.clock().Now())));
  RETURN_IF_ERROR(insert.Run());
  const int64_t id = db.last_insert_rowid();
  ASSIGN_OR_RETURN(Statement arm_insert,
                   db.Prepare("INSERT INTO experiment_arms (experiment_id, name, version, "
                              "share_percent) VALUES (?, ?, ?, ?)"));
  for (const ExperimentArm& arm : arms) {
    RETURN_IF_ERROR(arm_insert.Reset());
    RETURN_IF_ERROR(arm_insert.BindInt(1, id));
    RETURN_IF_ERROR(arm_insert.BindText(2, arm.name));
    RETURN_IF_ERROR(arm_insert.BindInt(3, arm.version));
    RETURN_IF_ERROR(arm_insert.BindInt(4, arm.share_percent));
    RETURN_IF_ERROR(arm_insert.Run());
  }
  RETURN_IF_ERROR(tx->Commit());
  return id;
}

namespace {

absl::Status Transition(Database& db, int64_t id, const char* from, const char* to) {
  ASSIGN_OR_RETURN(auto tx, Transaction::Begin(db));
  ASSIGN_OR_RETURN(Statement status, db.Prepare("SELECT status FROM experiments WHERE id = ?"));
  RETURN_IF_ERROR(status.BindInt(1, id));
  ASSIGN_OR_RETURN(bool found, status.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("no experiment ", id));
  if (status.ColumnText(0) != from) {
    return absl::FailedPreconditionError(
        absl::StrCat("experiment ", id, " is ", status.ColumnText(0), ", not ", from));
  }
  ASSIGN_OR_RETURN(Statement update, db.Prepare("UPDATE experiments SET status = ? WHERE id = ?"));
  RETURN_IF_ERROR(update.BindText(1, to));
  RETURN_IF_ERROR(update.BindInt(2, id));
  absl::Status ran = update.Run();
  if (!ran.ok()) {
    // The unique index allows one running experiment per model.
    return absl::FailedPreconditionError(
        absl::StrCat("experiment ", id, " cannot become ", to, ": ", ran.message()));
  }
  return tx->Commit();
}

}  // namespace

absl::Status ExperimentStore::Start(int64_t id) {
  return Transition(placements_.database(), id, "draft", "running");
}

absl::Status ExperimentStore::Stop(int64_t id) {
  return Transition(placements_.database(), id, "running", "stopped");
}

std::string NotRoutedAsPlanned(const ExperimentArm& arm) {
  const nlohmann::json m = ParseJsonOrDiscarded(arm.latest_metrics_json);
  if (!m.is_object() || !m.contains("tables_error") || !m["tables_error"].is_string()) return "";
  return m["tables_error"].get<std::string>();
}

absl::StatusOr<int64_t> ExperimentStore::Promote(int64_t id, const std::string& arm, bool force) {
  ASSIGN_OR_RETURN(Experiment e, Get(id));
  if (e.status == "draft") {
    return absl::FailedPreconditionError(
        absl::StrCat("experiment ", id, " has not run; start it before promoting an arm"));
  }
  for (const ExperimentArm& a : e.arms) {
    if (a.name != arm) continue;
    if (const std::string why = NotRoutedAsPlanned(a); !why.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("experiment ", id, ": arm ", arm, " was not routed as planned (", why,
                       "); its metrics do not measure version ", a.version, ", not promoting it"));
    }
    if (!force) {
      RETURN_IF_ERROR(placements_.CheckPredictedNotSlower(a.version));
      ASSIGN_OR_RETURN(const MeasuredAgainstVanilla measured, MeasuredVsVanilla(e));
      const auto ratio = measured.moe_ratio.find(arm);
      if (ratio != measured.moe_ratio.end() && ratio->second > PlacementStore::kSlowerThanVanilla) {
        return absl::FailedPreconditionError(absl::StrCat(
            "experiment ", id, ": arm ", arm, "'s MoE layer was measured ",
            absl::StrFormat("%.3f", ratio->second), "x the vanilla arm ", measured.vanilla_arm,
            "'s (more than 2% slower is refused); --force to promote it anyway"));
      }
    }
    RETURN_IF_ERROR(placements_.Activate(a.version));
    if (e.status == "running") RETURN_IF_ERROR(Stop(id));
    return a.version;
  }
  return absl::NotFoundError(absl::StrCat("experiment ", id, " has no arm '", arm, "'"));
}

absl::StatusOr<MeasuredAgainstVanilla> ExperimentStore::MeasuredVsVanilla(const Experiment& e) {
  MeasuredAgainstVanilla out;
  std::map<std::string, double> moe_ms;
  int vanilla_arms = 0;
  const ExperimentArm* vanilla = nullptr;
  for (const ExperimentArm& a : e.arms) {
    ASSIGN_OR_RETURN(const PlacementVersion v, placements_.Get(a.version));
    if (v.algorithm == "vanilla") {
      ++vanilla_arms;
      vanilla = &a;
    }
    const nlohmann::json m = ParseJsonOrDiscarded(a.latest_metrics_json);
    if (m.is_object() && m.contains("moe_layer_ms") && m["moe_layer_ms"].is_number() &&
        m["moe_layer_ms"].get<double>() > 0) {
      moe_ms[a.name] = m["moe_layer_ms"].get<double>();
    }
  }
  if (vanilla_arms != 1) return out;
  out.vanilla_arm = vanilla->name;
  const auto base = moe_ms.find(vanilla->name);
  if (base == moe_ms.end()) return out;
  for (const auto& [arm, ms] : moe_ms) {
    if (arm != vanilla->name) out.moe_ratio[arm] = ms / base->second;
  }
  return out;
}

absl::StatusOr<Experiment> ExperimentStore::Get(int64_t id) {
  Database& db = placements_.database();
  ASSIGN_OR_RETURN(Statement row, db.Prepare("SELECT e.id, m.name, e.name, e.status FROM "
                                             "experiments e JOIN models m ON m.id = e.model_id "
                                             "WHERE e.id = ?"));
  RETURN_IF_ERROR(row.BindInt(1, id));
  ASSIGN_OR_RETURN(bool found, row.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("no experiment ", id));
  Experiment e{row.ColumnInt(0), row.ColumnText(1), row.ColumnText(2), row.ColumnText(3), {}};
  ASSIGN_OR_RETURN(Statement arms,
                   db.Prepare("SELECT a.name, a.version, a.share_percent, (SELECT metrics_json "
                              "FROM experiment_metrics x WHERE x.experiment_id = a.experiment_id "
                              "AND x.arm = a.name ORDER BY x.id DESC LIMIT 1) FROM "
                              "experiment_arms a WHERE a.experiment_id = ? ORDER BY a.name"));
  RETURN_IF_ERROR(arms.BindInt(1, id));
  while (true) {
    ASSIGN_OR_RETURN(bool more, arms.Step());
    if (!more) break;
    e.arms.push_back({arms.ColumnText(0), arms.ColumnInt(1), static_cast<int>(arms.ColumnInt(2)),
                      arms.ColumnText(3)});
  }
  return e;
}

absl::StatusOr<std::vector<Experiment>> ExperimentStore::List(const std::string& model) {
  std::vector<int64_t> ids;
  {
    ASSIGN_OR_RETURN(Statement rows,
                     placements_.database().Prepare(
                         "SELECT e.id FROM experiments e JOIN models m ON m.id = e.model_id "
                         "WHERE m.name = ? ORDER BY e.id"));
    RETURN_IF_ERROR(rows.BindText(1, model));
    while (true) {
      ASSIGN_OR_RETURN(bool more, rows.Step());
      if (!more) break;
      ids.push_back(rows.ColumnInt(0));
    }
  }
  std::vector<Experiment> out;
  for (int64_t id : ids) {
    ASSIGN_OR_RETURN(Experiment e, Get(id));
    out.push_back(std::move(e));
  }
  return out;
}

absl::Status ExperimentStore::RecordArmMetrics(int64_t id, const std::string& arm,
                                               const std::string& json) {
  nlohmann::json parsed = ParseJsonOrDiscarded(json);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InvalidArgumentError("arm metrics must be a JSON object");
  }
  ASSIGN_OR_RETURN(Experiment e, Get(id));
  if (e.status != "running") {
    return absl::FailedPreconditionError(absl::StrCat("experiment ", id, " is ", e.status));
  }
  bool known = false;
  for (const ExperimentArm& a : e.arms) known |= a.name == arm;
  if (!known)
    return absl::NotFoundError(absl::StrCat("experiment ", id, " has no arm '", arm, "'"));
  Database& db = placements_.database();
  ASSIGN_OR_RETURN(auto tx, Transaction::Begin(db));
  ASSIGN_OR_RETURN(Statement insert,
                   db.Prepare("INSERT INTO experiment_metrics (experiment_id, arm, metrics_json, "
                              "at) VALUES (?, ?, ?, ?)"));
  RETURN_IF_ERROR(insert.BindInt(1, id));
  RETURN_IF_ERROR(insert.BindText(2, arm));
  RETURN_IF_ERROR(insert.BindText(3, json));
  RETURN_IF_ERROR(insert.BindInt(4, absl::ToUnixMicros(placements_.clock().Now())));
  RETURN_IF_ERROR(insert.Run());
  return tx->Commit();
}

}  // namespace semmoe::planner
