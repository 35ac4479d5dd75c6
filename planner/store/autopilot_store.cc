#include "planner/store/autopilot_store.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace semmoe::planner {
namespace {

constexpr std::array<const char*, 6> kActions = {"steady",  "wait",     "refuse",
                                                 "rollout", "rollback", "error"};

absl::StatusOr<int64_t> ModelId(Database& db, const std::string& model) {
  ASSIGN_OR_RETURN(Statement find, db.Prepare("SELECT id FROM models WHERE name = ?"));
  RETURN_IF_ERROR(find.BindText(1, model));
  ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("unknown model '", model, "'"));
  return find.ColumnInt(0);
}

}  // namespace

bool IsAutopilotAction(const std::string& action) {
  return std::find(kActions.begin(), kActions.end(), action) != kActions.end();
}

absl::StatusOr<int64_t> AutopilotStore::Record(const AutopilotDecision& d) {
  if (!IsAutopilotAction(d.action)) {
    return absl::InvalidArgumentError(absl::StrCat("'", d.action, "' is not an autopilot action"));
  }
  const nlohmann::json figures = ParseJsonOrDiscarded(d.figures_json);
  if (!figures.is_object()) {
    return absl::InvalidArgumentError("an autopilot decision's figures must be a JSON object");
  }
  Database& db = placements_.database();
  ASSIGN_OR_RETURN(auto tx, Transaction::Begin(db));
  ASSIGN_OR_RETURN(const int64_t model_id, ModelId(db, d.model));
  const int64_t now = absl::ToUnixMicros(placements_.clock().Now());
  if (d.action == "wait" || d.action == "steady" || d.action == "error") {
    ASSIGN_OR_RETURN(Statement last,
                     db.Prepare("SELECT id, action, reason, served_version, candidate_version, "
                                "moved_experts, figures_json FROM autopilot_decisions "
                                "WHERE model_id = ? ORDER BY id DESC LIMIT 1"));
    RETURN_IF_ERROR(last.BindInt(1, model_id));
    ASSIGN_OR_RETURN(const bool any, last.Step());
    if (any && last.ColumnText(1) == d.action && last.ColumnText(2) == d.reason &&
        last.ColumnInt(3) == d.served_version && last.ColumnInt(4) == d.candidate_version &&
        last.ColumnInt(5) == d.moved_experts && last.ColumnText(6) == d.figures_json) {
      const int64_t id = last.ColumnInt(0);
      ASSIGN_OR_RETURN(Statement count,
                       db.Prepare("UPDATE autopilot_decisions SET repeats = repeats + 1, "
                                  "last_at = MAX(?, COALESCE(last_at, at)) WHERE id = ?"));
      RETURN_IF_ERROR(count.BindInt(1, now));
      RETURN_IF_ERROR(count.BindInt(2, id));
      RETURN_IF_ERROR(count.Run());
      RETURN_IF_ERROR(tx->Commit());
      return id;
    }
  }
  ASSIGN_OR_RETURN(Statement insert,
                   db.Prepare("INSERT INTO autopilot_decisions (model_id, at, action, reason, "
                              "served_version, candidate_version, moved_experts, figures_json) "
                              "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
  RETURN_IF_ERROR(insert.BindInt(1, model_id));
  RETURN_IF_ERROR(insert.BindInt(2, now));
  RETURN_IF_ERROR(insert.BindText(3, d.action));
  RETURN_IF_ERROR(insert.BindText(4, d.reason));
  RETURN_IF_ERROR(insert.BindInt(5, d.served_version));
  RETURN_IF_ERROR(insert.BindInt(6, d.candidate_version));
  RETURN_IF_ERROR(insert.BindInt(7, d.moved_experts));
  RETURN_IF_ERROR(insert.BindText(8, d.figures_json));
  RETURN_IF_ERROR(insert.Run());
  const int64_t id = db.last_insert_rowid();
  RETURN_IF_ERROR(tx->Commit());
  return id;
}

absl::StatusOr<std::vector<AutopilotDecision>> AutopilotStore::Latest(const std::string& model,
                                                                      int limit) {
  Database& db = placements_.database();
  ASSIGN_OR_RETURN(const int64_t model_id, ModelId(db, model));
  ASSIGN_OR_RETURN(Statement rows,
                   db.Prepare("SELECT id, at, action, reason, served_version, candidate_version, "
                              "moved_experts, figures_json, repeats, COALESCE(last_at, at) "
                              "FROM autopilot_decisions WHERE model_id = ? ORDER BY id DESC "
                              "LIMIT ?"));
  RETURN_IF_ERROR(rows.BindInt(1, model_id));
  RETURN_IF_ERROR(rows.BindInt(2, std::max(0, limit)));
  std::vector<AutopilotDecision> out;
  while (true) {
    ASSIGN_OR_RETURN(bool more, rows.Step());
    if (!more) break;
    AutopilotDecision d;
    d.id = rows.ColumnInt(0);
    d.model = model;
    d.at = absl::FromUnixMicros(rows.ColumnInt(1));
    d.action = rows.ColumnText(2);
    d.reason = rows.ColumnText(3);
    d.served_version = rows.ColumnInt(4);
    d.candidate_version = rows.ColumnInt(5);
    d.moved_experts = static_cast<int>(rows.ColumnInt(6));
    d.figures_json = rows.ColumnText(7);
    d.repeats = rows.ColumnInt(8);
    d.last_at = absl::FromUnixMicros(rows.ColumnInt(9));
    out.push_back(std::move(d));
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> AutopilotStore::Counts(
    const std::string& model) {
  Database& db = placements_.database();
  ASSIGN_OR_RETURN(const int64_t model_id, ModelId(db, model));
  ASSIGN_OR_RETURN(Statement rows,
                   db.Prepare("SELECT action, SUM(repeats) FROM autopilot_decisions "
                              "WHERE model_id = ? GROUP BY action ORDER BY action"));
  RETURN_IF_ERROR(rows.BindInt(1, model_id));
  std::vector<std::pair<std::string, int64_t>> out;
  while (true) {
    ASSIGN_OR_RETURN(bool more, rows.Step());
    if (!more) break;
    out.emplace_back(rows.ColumnText(0), rows.ColumnInt(1));
  }
  return out;
}

}  // namespace semmoe::planner
