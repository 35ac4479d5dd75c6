// PlacementStore: versioned, immutable placements in the planner's SQLite database.
//
// A placement version belongs to a model, records its parent, algorithm, parameters and metrics
// (JSON text), and its expert → device assignment per MoE layer. Once written a version never
// changes (triggers refuse updates to its content and deletes); only its status moves:
// draft → active → retired (and retired → active again on rollback). At most one version per
// model is active. Every write is one transaction, so a crash at any point leaves either the
// whole version or none of it.
//
// Thread-compatible: one PlacementStore per thread; several processes may open the same file
// (WAL: readers run beside a writer).
#ifndef SEMMOE_PLANNER_STORE_PLACEMENT_STORE_H_
#define SEMMOE_PLANNER_STORE_PLACEMENT_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "planner/placement/placement.h"
#include "planner/store/database.h"

namespace semmoe::planner {

struct PlacementVersion {
  int64_t version = 0;
  std::string model;
  std::string name;
  std::optional<int64_t> parent;
  std::string algorithm;
  std::string params_json = "{}";
  std::string metrics_json = "{}";
  std::string status;  // "draft", "active" or "retired".
  absl::Time created;
  Placement placement = *Placement::Vanilla({0}, 1, 1);
};

// The attention mode `v` was built for ("dp" or "tp"): its params' "mode", "dp" where it has none
// (imports, versions older than the field) or where the field is not a string.
std::string AttentionModeOf(const PlacementVersion& v);

class PlacementStore {
 public:
  struct Options {
    Clock* clock = Clock::Real();  // Not owned.
    DatabaseOptions database;
  };
  // Opens (creating and migrating as needed) the database at `path`.
  static absl::StatusOr<std::unique_ptr<PlacementStore>> Open(const std::string& path,
                                                              const Options& options);
  static absl::StatusOr<std::unique_ptr<PlacementStore>> Open(const std::string& path) {
    return Open(path, Options{});
  }

  // Registers a model by name (idempotent for the same shape; InvalidArgument if the name is
  // taken by another shape).
  absl::Status AddModel(const std::string& model, int num_layers, int num_experts);

  // Stores a new draft version — with its affinity tables (TokenAffinity::Serialize bytes) if
  // given, in the same transaction — and returns its number. NotFound for an unknown model or
  // parent; InvalidArgument if the placement does not fit the model or the JSON fields are not
  // objects.
  // `layer_tables`: the A tables (TransitionTable::Serialize bytes), likewise optional.
  absl::StatusOr<int64_t> Create(const PlacementVersion& version,
                                 absl::string_view affinity_tables = {},
                                 absl::string_view layer_tables = {});

  // The affinity tables stored with `version`; NotFound if it has none.
  absl::StatusOr<std::string> GetAffinityTables(int64_t version);
  // The A tables stored with `version`; NotFound if it has none.
  absl::StatusOr<std::string> GetLayerTables(int64_t version);

  absl::StatusOr<PlacementVersion> Get(int64_t version);
  // The models' names, sorted.
  absl::StatusOr<std::vector<std::string>> Models();
  // Every version of `model`, oldest first.
  absl::StatusOr<std::vector<PlacementVersion>> List(const std::string& model);
  // The active version of `model`, if any.
  absl::StatusOr<std::optional<PlacementVersion>> Active(const std::string& model);

  // Makes `version` active; the model's previously active version becomes retired.
  absl::Status Activate(int64_t version);

  // The scale model's prediction of `version` on `cluster` (a JSON object with at least
  // predicted_vs_vanilla and predicted_max_rate_vs_vanilla: planner/sim/prediction.h),
  // replacing an earlier one for that cluster. NotFound for an unknown version.
  absl::Status SetPrediction(int64_t version, const std::string& cluster, const std::string& json);
  // Every cluster's prediction of `version`, by cluster.
  absl::StatusOr<std::map<std::string, std::string>> Predictions(int64_t version);
  // The guard where versions are activated (planner activate, the autopilot, experiments
  // promote): FailedPrecondition naming the cluster when a prediction of `version` has its MoE
  // layer more than 2% slower than vanilla's, or its max rate in SLO more than 2% lower; OK
  // when none does (or none was made).
  static constexpr double kSlowerThanVanilla = 1.02;
  absl::Status CheckPredictedNotSlower(int64_t version);
  // The guard's rule on one prediction: why it is refused ("its MoE layer is predicted 1.1x
  // vanilla's"), or "" when it passes (a max rate ratio of 0: vanilla's was 0, not compared).
  static std::string WhySlowerThanVanilla(double moe_vs_vanilla, double max_rate_vs_vanilla);
  // Re-activates the version that was active before the current one; returns it.
  // FailedPrecondition when there is none.
  absl::StatusOr<int64_t> Rollback(const std::string& model);

  Database& database() { return *db_; }
  Clock& clock() { return *clock_; }

 private:
  PlacementStore(std::unique_ptr<Database> db, Clock* clock) : db_(std::move(db)), clock_(clock) {}
  absl::StatusOr<PlacementVersion> ReadVersion(Statement& row);
  absl::StatusOr<std::string> GetBlob(const char* table, const char* what, int64_t version);

  std::unique_ptr<Database> db_;
  Clock* clock_;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_STORE_PLACEMENT_STORE_H_
