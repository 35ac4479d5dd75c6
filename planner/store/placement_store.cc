#include "planner/store/placement_store.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "planner/store/migrations.h"

namespace semmoe::planner {
namespace {

const Migration kMigrations[] = {
    {1, R"sql(
      CREATE TABLE models (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        num_layers INTEGER NOT NULL CHECK (num_layers > 0),
        num_experts INTEGER NOT NULL CHECK (num_experts > 0),
        created_at INTEGER NOT NULL);
      CREATE TABLE placements (
        version INTEGER PRIMARY KEY AUTOINCREMENT,
        model_id INTEGER NOT NULL REFERENCES models(id),
        name TEXT NOT NULL,
        parent INTEGER REFERENCES placements(version),
        algorithm TEXT NOT NULL,
        params_json TEXT NOT NULL,
        metrics_json TEXT NOT NULL,
        num_devices INTEGER NOT NULL CHECK (num_devices > 0),
        status TEXT NOT NULL CHECK (status IN ('draft', 'active', 'retired')),
        created_at INTEGER NOT NULL);
      CREATE UNIQUE INDEX one_active_placement_per_model ON placements(model_id)
        WHERE status = 'active';
      CREATE TABLE placement_layers (
        version INTEGER NOT NULL REFERENCES placements(version),
        layer INTEGER NOT NULL,
        model_layer INTEGER NOT NULL,
        device_of BLOB NOT NULL,
        PRIMARY KEY (version, layer));
      CREATE TABLE activations (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        model_id INTEGER NOT NULL REFERENCES models(id),
        version INTEGER NOT NULL REFERENCES placements(version),
        at INTEGER NOT NULL);
      CREATE TRIGGER placement_content_immutable
        BEFORE UPDATE OF version, model_id, name, parent, algorithm, params_json, metrics_json,
                         num_devices, created_at ON placements
        BEGIN SELECT RAISE(ABORT, 'placement versions are immutable'); END;
      CREATE TRIGGER placement_never_deleted BEFORE DELETE ON placements
        BEGIN SELECT RAISE(ABORT, 'placement versions are immutable'); END;
      CREATE TRIGGER placement_layers_immutable BEFORE UPDATE ON placement_layers
        BEGIN SELECT RAISE(ABORT, 'placement versions are immutable'); END;
      CREATE TRIGGER placement_layers_never_deleted BEFORE DELETE ON placement_layers
        BEGIN SELECT RAISE(ABORT, 'placement versions are immutable'); END;
    )sql"},
    {2, R"sql(
      CREATE TABLE affinity_tables (
        version INTEGER PRIMARY KEY REFERENCES placements(version),
        format INTEGER NOT NULL,
        data BLOB NOT NULL);
      CREATE TRIGGER affinity_tables_immutable BEFORE UPDATE ON affinity_tables
        BEGIN SELECT RAISE(ABORT, 'placement versions are immutable'); END;
      CREATE TRIGGER affinity_tables_never_deleted BEFORE DELETE ON affinity_tables
        BEGIN SELECT RAISE(ABORT, 'placement versions are immutable'); END;
    )sql"},
    {3, R"sql(
      CREATE TABLE experiments (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        model_id INTEGER NOT NULL REFERENCES models(id),
        name TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('draft', 'running', 'stopped')),
        created_at INTEGER NOT NULL);
      CREATE UNIQUE INDEX one_running_experiment_per_model ON experiments(model_id)
        WHERE status = 'running';
      CREATE TABLE experiment_arms (
        experiment_id INTEGER NOT NULL REFERENCES experiments(id),
        name TEXT NOT NULL,
        version INTEGER NOT NULL REFERENCES placements(version),
        share_percent INTEGER NOT NULL CHECK (share_percent BETWEEN 1 AND 100),
        PRIMARY KEY (experiment_id, name));
      CREATE TRIGGER experiment_arms_fixed BEFORE UPDATE ON experiment_arms
        BEGIN SELECT RAISE(ABORT, 'experiment arms are fixed once created'); END;
      CREATE TRIGGER experiment_arms_kept BEFORE DELETE ON experiment_arms
        BEGIN SELECT RAISE(ABORT, 'experiment arms are fixed once created'); END;
      CREATE TABLE experiment_metrics (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        experiment_id INTEGER NOT NULL,
        arm TEXT NOT NULL,
        metrics_json TEXT NOT NULL,
        at INTEGER NOT NULL,
        FOREIGN KEY (experiment_id, arm) REFERENCES experiment_arms(experiment_id, name));
    )sql"},
    {4, R"sql(
      CREATE TABLE layer_tables (
        version INTEGER PRIMARY KEY REFERENCES placements(version),
        format INTEGER NOT NULL,
        data BLOB NOT NULL);
      CREATE TRIGGER layer_tables_immutable BEFORE UPDATE ON layer_tables
        BEGIN SELECT RAISE(ABORT, 'placement versions are immutable'); END;
      CREATE TRIGGER layer_tables_never_deleted BEFORE DELETE ON layer_tables
        BEGIN SELECT RAISE(ABORT, 'placement versions are immutable'); END;
    )sql"},
    // Replicated experts: per layer, [devices × R] i32 expert ids; NULL without replicas.
    {5, R"sql(
      ALTER TABLE placement_layers ADD COLUMN replicas BLOB;
    )sql"},
    // The DP router's kNN index of issue 20; removed in issue 22 (it lost to the per-token rule
    // on held-out prompts, docs/PLANNER.md). The table stays so that old databases still open.
    {6, R"sql(
      CREATE TABLE request_index (
        version INTEGER PRIMARY KEY REFERENCES placements(version),
        format INTEGER NOT NULL,
        data BLOB NOT NULL);
      CREATE TRIGGER request_index_immutable BEFORE UPDATE ON request_index
        BEGIN SELECT RAISE(ABORT, 'placement versions are immutable'); END;
      CREATE TRIGGER request_index_never_deleted BEFORE DELETE ON request_index
        BEGIN SELECT RAISE(ABORT, 'placement versions are immutable'); END;
    )sql"},
    // The autopilot's decisions (autopilot_store.h), append-only.
    {7, R"sql(
      CREATE TABLE autopilot_decisions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        model_id INTEGER NOT NULL REFERENCES models(id),
        at INTEGER NOT NULL,
        action TEXT NOT NULL,
        reason TEXT NOT NULL,
        served_version INTEGER NOT NULL,
        candidate_version INTEGER NOT NULL,
        moved_experts INTEGER NOT NULL,
        figures_json TEXT NOT NULL);
      CREATE INDEX autopilot_decisions_by_model ON autopilot_decisions(model_id, id);
      CREATE TRIGGER autopilot_decisions_immutable BEFORE UPDATE ON autopilot_decisions
        BEGIN SELECT RAISE(ABORT, 'autopilot decisions are a log'); END;
      CREATE TRIGGER autopilot_decisions_never_deleted BEFORE DELETE ON autopilot_decisions
        BEGIN SELECT RAISE(ABORT, 'autopilot decisions are a log'); END;
    )sql"},
    // The topology a version was built for (topology.h's JSON); NULL: flat.
    {8, R"sql(
      ALTER TABLE placements ADD COLUMN topology TEXT;
      CREATE TRIGGER placement_topology_immutable BEFORE UPDATE OF topology ON placements
        BEGIN SELECT RAISE(ABORT, 'placement versions are immutable'); END;
    )sql"},
    // Identical consecutive non-events (wait, steady, error) are counted on their first row, not
    // appended again (an autopilot waiting at its period wrote ~650 MB of identical rows an
    // hour): `repeats` and `last_at` may only grow; the rest stays a log.
    {9, R"sql(
      ALTER TABLE autopilot_decisions ADD COLUMN repeats INTEGER NOT NULL DEFAULT 1
        CHECK (repeats >= 1);
      ALTER TABLE autopilot_decisions ADD COLUMN last_at INTEGER;
      DROP TRIGGER autopilot_decisions_immutable;
      CREATE TRIGGER autopilot_decisions_immutable
        BEFORE UPDATE OF id, model_id, at, action, reason, served_version, candidate_version,
                         moved_experts, figures_json ON autopilot_decisions
        BEGIN SELECT RAISE(ABORT, 'autopilot decisions are a log'); END;
      CREATE TRIGGER autopilot_decisions_repeats_grow
        BEFORE UPDATE OF repeats, last_at ON autopilot_decisions
        WHEN NEW.repeats < OLD.repeats OR NEW.last_at < COALESCE(OLD.last_at, OLD.at)
        BEGIN SELECT RAISE(ABORT, 'autopilot decisions are a log'); END;
    )sql"},
    // The scale model's predictions of a version on a cluster (planner build --cluster): derived,
    // so replaced when predicted again, unlike the version itself.
    {10, R"sql(
      CREATE TABLE predictions (
        version INTEGER NOT NULL REFERENCES placements(version),
        cluster TEXT NOT NULL,
        json TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (version, cluster));
    )sql"},
};

bool IsJsonObject(const std::string& text) {
  nlohmann::json j = ParseJsonOrDiscarded(text);
  return !j.is_discarded() && j.is_object();
}

}  // namespace

std::string AttentionModeOf(const PlacementVersion& v) {
  const nlohmann::json params = ParseJsonOrDiscarded(v.params_json);
  if (!params.is_object()) return "dp";
  auto mode = params.find("mode");
  return mode != params.end() && mode->is_string() && *mode == "tp" ? "tp" : "dp";
}

absl::StatusOr<std::unique_ptr<PlacementStore>> PlacementStore::Open(const std::string& path,
                                                                     const Options& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path, options.database));
  if (!options.database.read_only) RETURN_IF_ERROR(Migrate(*db, kMigrations).status());
  return std::unique_ptr<PlacementStore>(new PlacementStore(std::move(db), options.clock));
}

absl::Status PlacementStore::AddModel(const std::string& model, int num_layers, int num_experts) {
  ASSIGN_OR_RETURN(auto tx, Transaction::Begin(*db_));
  ASSIGN_OR_RETURN(Statement find,
                   db_->Prepare("SELECT num_layers, num_experts FROM models WHERE name = ?"));
  RETURN_IF_ERROR(find.BindText(1, model));
  ASSIGN_OR_RETURN(bool exists, find.Step());
  if (exists) {
    if (find.ColumnInt(0) != num_layers || find.ColumnInt(1) != num_experts) {
      return absl::InvalidArgumentError(
          absl::StrCat("model '", model, "' is registered with ", find.ColumnInt(0), " layers and ",
                       find.ColumnInt(1), " experts, not ", num_layers, " and ", num_experts));
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(Statement insert,
                   db_->Prepare("INSERT INTO models (name, num_layers, num_experts, created_at) "
                                "VALUES (?, ?, ?, ?)"));
  RETURN_IF_ERROR(insert.BindText(1, model));
  RETURN_IF_ERROR(insert.BindInt(2, num_layers));
  RETURN_IF_ERROR(insert.BindInt(3, num_experts));
  RETURN_IF_ERROR(insert.BindInt(4, absl::ToUnixMicros(clock_->Now())));
  RETURN_IF_ERROR(insert.Run());
  return tx->Commit();
}

absl::StatusOr<int64_t> PlacementStore::Create(const PlacementVersion& v,
                                               absl::string_view affinity_tables,
                                               absl::string_view layer_tables) {
  if (!IsJsonObject(v.params_json) || !IsJsonObject(v.metrics_json)) {
    return absl::InvalidArgumentError("params_json and metrics_json must be JSON objects");
  }
  ASSIGN_OR_RETURN(auto tx, Transaction::Begin(*db_));
  ASSIGN_OR_RETURN(Statement model,
                   db_->Prepare("SELECT id, num_layers, num_experts FROM models WHERE name = ?"));
  RETURN_IF_ERROR(model.BindText(1, v.model));
  ASSIGN_OR_RETURN(bool found, model.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("unknown model '", v.model, "'"));
  if (model.ColumnInt(1) != v.placement.num_layers() ||
      model.ColumnInt(2) != v.placement.num_experts()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "placement has ", v.placement.num_layers(), " layers and ", v.placement.num_experts(),
        " experts; model '", v.model, "' has ", model.ColumnInt(1), " and ", model.ColumnInt(2)));
  }
  const int64_t model_id = model.ColumnInt(0);
  if (v.parent.has_value()) {
    ASSIGN_OR_RETURN(Statement parent,
                     db_->Prepare("SELECT 1 FROM placements WHERE version = ? AND model_id = ?"));
    RETURN_IF_ERROR(parent.BindInt(1, *v.parent));
    RETURN_IF_ERROR(parent.BindInt(2, model_id));
    ASSIGN_OR_RETURN(bool parent_found, parent.Step());
    if (!parent_found) {
      return absl::NotFoundError(
          absl::StrCat("parent version ", *v.parent, " of model '", v.model, "' does not exist"));
    }
  }
  ASSIGN_OR_RETURN(Statement insert,
                   db_->Prepare("INSERT INTO placements (model_id, name, parent, algorithm, "
                                "params_json, metrics_json, num_devices, status, created_at, "
                                "topology) VALUES (?, ?, ?, ?, ?, ?, ?, 'draft', ?, ?)"));
  RETURN_IF_ERROR(insert.BindInt(1, model_id));
  RETURN_IF_ERROR(insert.BindText(2, v.name));
  RETURN_IF_ERROR(v.parent ? insert.BindInt(3, *v.parent) : insert.BindNull(3));
  RETURN_IF_ERROR(insert.BindText(4, v.algorithm));
  RETURN_IF_ERROR(insert.BindText(5, v.params_json));
  RETURN_IF_ERROR(insert.BindText(6, v.metrics_json));
  RETURN_IF_ERROR(insert.BindInt(7, v.placement.num_devices()));
  RETURN_IF_ERROR(insert.BindInt(8, absl::ToUnixMicros(clock_->Now())));
  RETURN_IF_ERROR(v.placement.topology() != nullptr
                      ? insert.BindText(9, v.placement.topology()->ToJson())
                      : insert.BindNull(9));
  RETURN_IF_ERROR(insert.Run());
  const int64_t version = db_->last_insert_rowid();
  ASSIGN_OR_RETURN(Statement layer,
                   db_->Prepare("INSERT INTO placement_layers (version, layer, model_layer, "
                                "device_of, replicas) VALUES (?, ?, ?, ?, ?)"));
  for (int l = 0; l < v.placement.num_layers(); ++l) {
    std::vector<uint8_t> blob(4 * v.placement.num_experts());
    for (int e = 0; e < v.placement.num_experts(); ++e) {
      const int32_t d = v.placement.Device(l, e);
      std::memcpy(&blob[4 * e], &d, 4);
    }
    RETURN_IF_ERROR(layer.Reset());
    RETURN_IF_ERROR(layer.BindInt(1, version));
    RETURN_IF_ERROR(layer.BindInt(2, l));
    RETURN_IF_ERROR(layer.BindInt(3, v.placement.moe_layers()[l]));
    RETURN_IF_ERROR(layer.BindBlob(4, blob));
    if (v.placement.replicas_per_device() == 0) {
      RETURN_IF_ERROR(layer.BindNull(5));
    } else {
      std::vector<uint8_t> replicas;
      for (int d = 0; d < v.placement.num_devices(); ++d) {
        for (int32_t e : v.placement.ReplicasOn(l, d)) {
          const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&e);
          replicas.insert(replicas.end(), bytes, bytes + 4);
        }
      }
      RETURN_IF_ERROR(layer.BindBlob(5, replicas));
    }
    RETURN_IF_ERROR(layer.Run());
  }
  if (!affinity_tables.empty()) {
    ASSIGN_OR_RETURN(Statement tables, db_->Prepare("INSERT INTO affinity_tables (version, "
                                                    "format, data) VALUES (?, 1, ?)"));
    RETURN_IF_ERROR(tables.BindInt(1, version));
    RETURN_IF_ERROR(tables.BindBlob(
        2, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(affinity_tables.data()),
                               affinity_tables.size())));
    RETURN_IF_ERROR(tables.Run());
  }
  for (const auto& [table, blob] :
       {std::pair<const char*, absl::string_view>{"layer_tables", layer_tables}}) {
    if (blob.empty()) continue;
    ASSIGN_OR_RETURN(Statement insert_blob,
                     db_->Prepare(absl::StrCat("INSERT INTO ", table,
                                               " (version, format, data) VALUES (?, 1, ?)")));
    RETURN_IF_ERROR(insert_blob.BindInt(1, version));
    RETURN_IF_ERROR(insert_blob.BindBlob(
        2, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(blob.data()), blob.size())));
    RETURN_IF_ERROR(insert_blob.Run());
  }
  RETURN_IF_ERROR(tx->Commit());
  return version;
}

namespace {
constexpr char kSelectVersion[] =
    "SELECT p.version, m.name, p.name, p.parent, p.algorithm, p.params_json, p.metrics_json, "
    "p.status, p.created_at, p.num_devices, m.num_experts, p.topology FROM placements p "
    "JOIN models m ON m.id = p.model_id ";
}  // namespace

absl::StatusOr<PlacementVersion> PlacementStore::ReadVersion(Statement& row) {
  PlacementVersion v;
  v.version = row.ColumnInt(0);
  v.model = row.ColumnText(1);
  v.name = row.ColumnText(2);
  if (!row.ColumnIsNull(3)) v.parent = row.ColumnInt(3);
  v.algorithm = row.ColumnText(4);
  v.params_json = row.ColumnText(5);
  v.metrics_json = row.ColumnText(6);
  v.status = row.ColumnText(7);
  v.created = absl::FromUnixMicros(row.ColumnInt(8));
  const int devices = static_cast<int>(row.ColumnInt(9));
  const int experts = static_cast<int>(row.ColumnInt(10));
  ASSIGN_OR_RETURN(Statement layers,
                   db_->Prepare("SELECT model_layer, device_of, replicas FROM placement_layers "
                                "WHERE version = ? ORDER BY layer"));
  RETURN_IF_ERROR(layers.BindInt(1, v.version));
  std::vector<int> moe_layers;
  std::vector<std::vector<int32_t>> device_of;
  std::vector<std::vector<std::vector<int32_t>>> replicas;
  while (true) {
    ASSIGN_OR_RETURN(bool more, layers.Step());
    if (!more) break;
    moe_layers.push_back(static_cast<int>(layers.ColumnInt(0)));
    const std::vector<uint8_t> blob = layers.ColumnBlob(1);
    if (blob.size() != 4u * experts) {
      return absl::DataLossError(absl::StrCat("placement version ", v.version, " layer ",
                                              moe_layers.size() - 1, ": corrupt assignment"));
    }
    std::vector<int32_t> row_devices(experts);
    std::memcpy(row_devices.data(), blob.data(), blob.size());
    device_of.push_back(std::move(row_devices));
    std::vector<std::vector<int32_t>> layer_replicas(devices);
    if (!layers.ColumnIsNull(2)) {
      const std::vector<uint8_t> r = layers.ColumnBlob(2);
      if (devices <= 0 || r.size() % (4u * devices) != 0) {
        return absl::DataLossError(absl::StrCat("placement version ", v.version, " layer ",
                                                moe_layers.size() - 1, ": corrupt replicas"));
      }
      const size_t per = r.size() / (4u * devices);
      for (int d = 0; d < devices; ++d) {
        layer_replicas[d].resize(per);
        std::memcpy(layer_replicas[d].data(), r.data() + 4 * per * d, 4 * per);
      }
    }
    replicas.push_back(std::move(layer_replicas));
  }
  auto placement = Placement::FromAssignment(moe_layers, experts, devices, std::move(device_of));
  if (placement.ok()) placement = placement->WithReplicas(std::move(replicas));
  if (!placement.ok()) {
    return absl::DataLossError(
        absl::StrCat("placement version ", v.version, ": ", placement.status().message()));
  }
  if (!row.ColumnIsNull(11)) {
    absl::StatusOr<Topology> topology = Topology::FromJson(row.ColumnText(11));
    if (topology.ok()) placement = placement->WithTopology(*std::move(topology));
    if (!placement.ok() || !topology.ok()) {
      return absl::DataLossError(
          absl::StrCat("placement version ", v.version, ": corrupt topology: ",
                       (topology.ok() ? placement.status() : topology.status()).message()));
    }
  }
  v.placement = std::move(*placement);
  return v;
}

absl::StatusOr<PlacementVersion> PlacementStore::Get(int64_t version) {
  ASSIGN_OR_RETURN(Statement row,
                   db_->Prepare(absl::StrCat(kSelectVersion, "WHERE p.version = ?")));
  RETURN_IF_ERROR(row.BindInt(1, version));
  ASSIGN_OR_RETURN(bool found, row.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("no placement version ", version));
  return ReadVersion(row);
}

absl::StatusOr<std::vector<std::string>> PlacementStore::Models() {
  ASSIGN_OR_RETURN(Statement rows, db_->Prepare("SELECT name FROM models ORDER BY name"));
  std::vector<std::string> out;
  while (true) {
    ASSIGN_OR_RETURN(bool more, rows.Step());
    if (!more) break;
    out.push_back(rows.ColumnText(0));
  }
  return out;
}

absl::StatusOr<std::vector<PlacementVersion>> PlacementStore::List(const std::string& model) {
  ASSIGN_OR_RETURN(Statement rows, db_->Prepare(absl::StrCat(
                                       kSelectVersion, "WHERE m.name = ? ORDER BY p.version")));
  RETURN_IF_ERROR(rows.BindText(1, model));
  std::vector<PlacementVersion> out;
  while (true) {
    ASSIGN_OR_RETURN(bool more, rows.Step());
    if (!more) break;
    ASSIGN_OR_RETURN(PlacementVersion v, ReadVersion(rows));
    out.push_back(std::move(v));
  }
  return out;
}

absl::StatusOr<std::optional<PlacementVersion>> PlacementStore::Active(const std::string& model) {
  ASSIGN_OR_RETURN(Statement row, db_->Prepare(absl::StrCat(
                                      kSelectVersion, "WHERE m.name = ? AND p.status = 'active'")));
  RETURN_IF_ERROR(row.BindText(1, model));
  ASSIGN_OR_RETURN(bool found, row.Step());
  if (!found) return std::optional<PlacementVersion>();
  ASSIGN_OR_RETURN(PlacementVersion v, ReadVersion(row));
  return std::optional<PlacementVersion>(std::move(v));
}

absl::StatusOr<std::string> PlacementStore::GetBlob(const char* table, const char* what,
                                                    int64_t version) {
  ASSIGN_OR_RETURN(Statement row,
                   db_->Prepare(absl::StrCat("SELECT data FROM ", table, " WHERE version = ?")));
  RETURN_IF_ERROR(row.BindInt(1, version));
  ASSIGN_OR_RETURN(bool found, row.Step());
  if (!found) {
    return absl::NotFoundError(absl::StrCat("placement version ", version, " has no ", what));
  }
  const std::vector<uint8_t> data = row.ColumnBlob(0);
  return std::string(data.begin(), data.end());
}

absl::StatusOr<std::string> PlacementStore::GetAffinityTables(int64_t version) {
  return GetBlob("affinity_tables", "affinity tables", version);
}

absl::StatusOr<std::string> PlacementStore::GetLayerTables(int64_t version) {
  return GetBlob("layer_tables", "layer tables", version);
}

absl::Status PlacementStore::SetPrediction(int64_t version, const std::string& cluster,
                                           const std::string& json) {
  if (!IsJsonObject(json)) {
    return absl::InvalidArgumentError("a prediction must be a JSON object");
  }
  ASSIGN_OR_RETURN(Statement find, db_->Prepare("SELECT 1 FROM placements WHERE version = ?"));
  RETURN_IF_ERROR(find.BindInt(1, version));
  ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("no placement version ", version));
  ASSIGN_OR_RETURN(Statement put,
                   db_->Prepare("INSERT OR REPLACE INTO predictions (version, cluster, json, at) "
                                "VALUES (?, ?, ?, ?)"));
  RETURN_IF_ERROR(put.BindInt(1, version));
  RETURN_IF_ERROR(put.BindText(2, cluster));
  RETURN_IF_ERROR(put.BindText(3, json));
  RETURN_IF_ERROR(put.BindInt(4, absl::ToUnixMicros(clock_->Now())));
  return put.Run();
}

absl::StatusOr<std::map<std::string, std::string>> PlacementStore::Predictions(int64_t version) {
  ASSIGN_OR_RETURN(Statement q, db_->Prepare("SELECT cluster, json FROM predictions "
                                             "WHERE version = ? ORDER BY cluster"));
  RETURN_IF_ERROR(q.BindInt(1, version));
  std::map<std::string, std::string> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    out[q.ColumnText(0)] = q.ColumnText(1);
  }
  return out;
}

std::string PlacementStore::WhySlowerThanVanilla(double moe, double rate) {
  if (moe > kSlowerThanVanilla) {
    return absl::StrCat("its MoE layer is predicted ", absl::SixDigits(moe), "x vanilla's");
  }
  if (rate > 0 && rate < 1 / kSlowerThanVanilla) {
    return absl::StrCat("its max rate in SLO is predicted ", absl::SixDigits(rate), "x vanilla's");
  }
  return "";
}

absl::Status PlacementStore::CheckPredictedNotSlower(int64_t version) {
  ASSIGN_OR_RETURN(const auto predictions, Predictions(version));
  for (const auto& [cluster, text] : predictions) {
    const nlohmann::json p = ParseJsonOrDiscarded(text);
    if (!p.is_object()) continue;
    const std::string why = WhySlowerThanVanilla(p.value("predicted_vs_vanilla", 0.0),
                                                 p.value("predicted_max_rate_vs_vanilla", 0.0));
    if (!why.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "version ", version, " is predicted slower than vanilla on ", cluster, ": ", why,
          " (planner build --cluster; more than ", absl::SixDigits((kSlowerThanVanilla - 1) * 100),
          "% worse is refused); --force to activate it anyway"));
    }
  }
  return absl::OkStatus();
}

absl::Status PlacementStore::Activate(int64_t version) {
  ASSIGN_OR_RETURN(auto tx, Transaction::Begin(*db_));
  ASSIGN_OR_RETURN(Statement find,
                   db_->Prepare("SELECT model_id FROM placements WHERE version = ?"));
  RETURN_IF_ERROR(find.BindInt(1, version));
  ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("no placement version ", version));
  const int64_t model_id = find.ColumnInt(0);
  ASSIGN_OR_RETURN(Statement retire,
                   db_->Prepare("UPDATE placements SET status = 'retired' "
                                "WHERE model_id = ? AND status = 'active' AND version != ?"));
  RETURN_IF_ERROR(retire.BindInt(1, model_id));
  RETURN_IF_ERROR(retire.BindInt(2, version));
  RETURN_IF_ERROR(retire.Run());
  ASSIGN_OR_RETURN(Statement activate,
                   db_->Prepare("UPDATE placements SET status = 'active' WHERE version = ?"));
  RETURN_IF_ERROR(activate.BindInt(1, version));
  RETURN_IF_ERROR(activate.Run());
  ASSIGN_OR_RETURN(Statement log, db_->Prepare("INSERT INTO activations (model_id, version, at) "
                                               "VALUES (?, ?, ?)"));
  RETURN_IF_ERROR(log.BindInt(1, model_id));
  RETURN_IF_ERROR(log.BindInt(2, version));
  RETURN_IF_ERROR(log.BindInt(3, absl::ToUnixMicros(clock_->Now())));
  RETURN_IF_ERROR(log.Run());
  return tx->Commit();
}

absl::StatusOr<int64_t> PlacementStore::Rollback(const std::string& model) {
  ASSIGN_OR_RETURN(std::optional<PlacementVersion> active, Active(model));
  if (!active.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("model '", model, "' has no active placement"));
  }
  int64_t version;
  {  // The query's statement is finished before Activate writes.
    ASSIGN_OR_RETURN(Statement previous,
                     db_->Prepare("SELECT a.version FROM activations a JOIN models m ON m.id = "
                                  "a.model_id WHERE m.name = ? AND a.version != ? "
                                  "ORDER BY a.id DESC LIMIT 1"));
    RETURN_IF_ERROR(previous.BindText(1, model));
    RETURN_IF_ERROR(previous.BindInt(2, active->version));
    ASSIGN_OR_RETURN(bool found, previous.Step());
    if (!found) {
      return absl::FailedPreconditionError(
          absl::StrCat("model '", model, "' has no earlier active placement to roll back to"));
    }
    version = previous.ColumnInt(0);
  }
  RETURN_IF_ERROR(Activate(version));
  return version;
}

}  // namespace semmoe::planner
