// `planner experiment …`: A/B experiments between placement versions, in the database
// (planner/store/experiment_store.h). Each prints one line (or the experiment as JSON for show).
#ifndef SEMMOE_PLANNER_CLI_EXPERIMENTS_H_
#define SEMMOE_PLANNER_CLI_EXPERIMENTS_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"

namespace semmoe::planner::cli {

// Arm "A" serves version `a` with 100 − share_b percent of the traffic, arm "B" version `b`.
absl::StatusOr<int64_t> ExperimentCreate(const std::string& db, const std::string& model,
                                         const std::string& name, int64_t a, int64_t b, int share_b,
                                         std::ostream& out);
absl::Status ExperimentStart(const std::string& db, int64_t id, std::ostream& out);
absl::Status ExperimentStop(const std::string& db, int64_t id, std::ostream& out);
// --force: promote an arm whose version is predicted slower than vanilla.
absl::Status ExperimentPromote(const std::string& db, int64_t id, const std::string& arm,
                               std::ostream& out, bool force = false);
absl::Status ExperimentShow(const std::string& db, int64_t id, std::ostream& out);
absl::Status ExperimentList(const std::string& db, const std::string& model, std::ostream& out);

}  // namespace semmoe::planner::cli

#endif  // SEMMOE_PLANNER_CLI_EXPERIMENTS_H_
