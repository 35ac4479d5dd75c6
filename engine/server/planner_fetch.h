// A placement version from the planner (PlannerService), for ranks started with
// `engine serve --placement VERSION --planner HOST:PORT`: its placement and, for Attention-TP,
// the tables that predict tokens' devices. Tables stream in chunks (planner/proto/table_chunks.h),
// so their size — tens of MB at a real vocabulary — never meets a gRPC message limit.
#ifndef SEMMOE_ENGINE_SERVER_PLANNER_FETCH_H_
#define SEMMOE_ENGINE_SERVER_PLANNER_FETCH_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/parallel/rank_placement.h"

namespace semmoe::engine {

struct FetchedVersion {
  std::string placement_json;  // The placement JSON file format.
  std::string affinity;        // TokenAffinity::Serialize bytes; "" if none or not asked for.
  std::string layer_tables;    // TransitionTable::Serialize bytes; "" if none or not asked for.
};

// Errors name the planner and the version: NOT_FOUND for an unknown version, UNAVAILABLE /
// DEADLINE_EXCEEDED when the planner does not answer in `timeout`, DATA_LOSS for a table stream
// that does not add up. A version without tables is not an error (they come back empty).
absl::StatusOr<FetchedVersion> FetchPlacementVersion(const std::string& planner, int64_t version,
                                                     bool with_tables,
                                                     absl::Duration timeout = absl::Seconds(60));

// The same, as a rank builds its placement from it (each part named for errors).
absl::StatusOr<PlacementSource> FetchPlacementSource(const std::string& planner, int64_t version,
                                                     bool with_tables);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_SERVER_PLANNER_FETCH_H_
