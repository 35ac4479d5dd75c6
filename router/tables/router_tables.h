// What the router places requests with: one placement version's prompt-score table
// (planner/affinity/prompt_score_table.h: per token id and rank, the term a prompt's fit sums).
// Immutable once built; TablesHolder swaps whole versions so requests in flight keep the tables
// they were placed with, and says why the tables wanted are not in use.
#ifndef SEMMOE_ROUTER_TABLES_ROUTER_TABLES_H_
#define SEMMOE_ROUTER_TABLES_ROUTER_TABLES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace semmoe::router {

struct RouterTables {
  int64_t version = 0;  // Placement version (0: from files).
  int ranks = 0;
  uint32_t vocab = 0;
  std::vector<float> log_terms;  // Row-major [vocab, ranks]: what Fit sums.

  // Per rank, how well the prompt fits (higher is better).
  std::vector<double> Fit(absl::Span<const int32_t> prompt) const;
  // Per rank, the prompt's expected share of activations (planner::PromptShares; sums to 1):
  // what the time rule predicts its rows from.
  std::vector<double> Share(absl::Span<const int32_t> prompt) const;
  // Per node, with ranks grouped by `node_of` (ranks entries, node ids from 0): the same rule
  // with each token's shares of a node's ranks added — Σ over tokens of log Σ_{r ∈ node}
  // exp(term[token][r]) (a token without scores adds nothing). Empty when node_of is not one id
  // per rank.
  std::vector<double> NodeFit(absl::Span<const int32_t> prompt,
                              absl::Span<const int> node_of) const;
};

// From fixed files: a version's affinity tables (TokenAffinity::Serialize bytes, e.g. `planner
// export`) and its placement JSON, computed exactly as the planner computes what it serves.
// InvalidArgument naming what is malformed, or when the placement's devices are not `ranks`.
absl::StatusOr<std::shared_ptr<const RouterTables>> BuildRouterTables(
    int64_t version, const std::string& affinity_bytes, const std::string& placement_json,
    int ranks, uint32_t vocab);

// From a prompt-score table (PromptScoreTable::Serialize bytes, what the planner serves).
// InvalidArgument when it is malformed or not for `ranks` ranks and a `vocab`-token vocabulary.
absl::StatusOr<std::shared_ptr<const RouterTables>> RouterTablesFromScores(
    int64_t version, const std::string& score_bytes, int ranks, uint32_t vocab);

// The tables in use, swapped atomically, and why the tables wanted are not (for the stats).
class TablesHolder {
 public:
  std::shared_ptr<const RouterTables> Get() const {
    absl::MutexLock lock(&mu_);
    return tables_;
  }
  // "" when the tables wanted are in use; else what is wrong (and what is used instead).
  std::string error() const {
    absl::MutexLock lock(&mu_);
    return error_;
  }
  void Set(std::shared_ptr<const RouterTables> tables, std::string error = "") {
    absl::MutexLock lock(&mu_);
    tables_ = std::move(tables);
    error_ = std::move(error);
  }
  // Keeps the tables, records a problem.
  void SetError(std::string error) {
    absl::MutexLock lock(&mu_);
    error_ = std::move(error);
  }

 private:
  mutable absl::Mutex mu_;
  std::shared_ptr<const RouterTables> tables_ ABSL_GUARDED_BY(mu_);
  std::string error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_TABLES_ROUTER_TABLES_H_
