// What the router places requests with: one placement version's DP scores S (token → local
// activation mass per rank, TokenAffinity::DpScores) and the fit of a prompt to each rank
// (planner/affinity/prompt_scores.h). Immutable once built; TablesHolder swaps whole versions
// so requests in flight keep the tables they were placed with.
#ifndef SEMMOE_ROUTER_TABLES_ROUTER_TABLES_H_
#define SEMMOE_ROUTER_TABLES_ROUTER_TABLES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace semmoe::router {

struct RouterTables {
  int64_t version = 0;  // Placement version (0: from files).
  int ranks = 0;
  uint32_t vocab = 0;
  std::vector<float> dp_scores;  // Row-major [vocab, ranks].
  std::vector<float> log_terms;  // planner::PromptLogTerms(dp_scores): what Fit sums.

  // Per rank, how well the prompt fits (higher is better).
  std::vector<double> Fit(absl::Span<const int32_t> prompt) const;
};

// From a version's stored tables (TokenAffinity::Serialize bytes) and its placement JSON.
// InvalidArgument naming what is malformed, or when the placement's devices are not `ranks`.
absl::StatusOr<std::shared_ptr<const RouterTables>> BuildRouterTables(
    int64_t version, const std::string& affinity_bytes, const std::string& placement_json,
    int ranks, uint32_t vocab);

// The tables in use, swapped atomically.
class TablesHolder {
 public:
  std::shared_ptr<const RouterTables> Get() const {
    absl::MutexLock lock(&mu_);
    return tables_;
  }
  void Set(std::shared_ptr<const RouterTables> tables) {
    absl::MutexLock lock(&mu_);
    tables_ = std::move(tables);
  }

 private:
  mutable absl::Mutex mu_;
  std::shared_ptr<const RouterTables> tables_ ABSL_GUARDED_BY(mu_);
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_TABLES_ROUTER_TABLES_H_
