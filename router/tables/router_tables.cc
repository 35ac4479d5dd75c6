#include "router/tables/router_tables.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "planner/affinity/prompt_score_table.h"
#include "planner/affinity/prompt_scores.h"
#include "planner/affinity/token_affinity.h"
#include "planner/placement/placement.h"

namespace semmoe::router {
namespace {

std::shared_ptr<const RouterTables> FromTable(int64_t version, planner::PromptScoreTable table) {
  auto tables = std::make_shared<RouterTables>();
  tables->version = version;
  tables->ranks = table.ranks();
  tables->vocab = table.vocab();
  tables->log_terms = std::move(table).TakeTerms();
  return tables;
}

}  // namespace

std::vector<double> RouterTables::Fit(absl::Span<const int32_t> prompt) const {
  std::vector<double> out(ranks);
  planner::SumPromptLogTerms<int32_t>(prompt, log_terms, ranks, absl::MakeSpan(out));
  return out;
}

std::vector<double> RouterTables::Share(absl::Span<const int32_t> prompt) const {
  std::vector<double> out(ranks);
  planner::PromptShares<int32_t>(prompt, log_terms, ranks, absl::MakeSpan(out));
  return out;
}

std::vector<double> RouterTables::NodeFit(absl::Span<const int32_t> prompt,
                                          absl::Span<const int> node_of) const {
  if (static_cast<int>(node_of.size()) != ranks) return {};
  int nodes = 0;
  for (int n : node_of) {
    if (n < 0) return {};
    nodes = std::max(nodes, n + 1);
  }
  std::vector<double> out(nodes, 0.0), sum(nodes);
  for (int32_t t : prompt) {
    if (t < 0 || static_cast<uint32_t>(t) >= vocab) continue;
    const float* row = log_terms.data() + static_cast<size_t>(t) * ranks;
    bool scored = false;
    for (int r = 0; r < ranks; ++r) scored = scored || row[r] != 0.0f;
    if (!scored) continue;
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int r = 0; r < ranks; ++r) sum[node_of[r]] += std::exp(static_cast<double>(row[r]));
    for (int n = 0; n < nodes; ++n) out[n] += sum[n] > 0 ? std::log(sum[n]) : 0.0;
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const RouterTables>> BuildRouterTables(
    int64_t version, const std::string& affinity_bytes, const std::string& placement_json,
    int ranks, uint32_t vocab) {
  absl::StatusOr<planner::TokenAffinity> affinity =
      planner::TokenAffinity::Deserialize(affinity_bytes);
  if (!affinity.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("affinity tables: ", affinity.status().message()));
  }
  absl::StatusOr<planner::Placement> placement = planner::Placement::FromJson(placement_json);
  if (!placement.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("placement: ", placement.status().message()));
  }
  if (placement->num_devices() != ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("the placement is for ", placement->num_devices(),
                     " devices; the router serves ", ranks, " ranks"));
  }
  absl::StatusOr<planner::PromptScoreTable> table =
      planner::PromptScoreTable::FromAffinity(*affinity, *placement, vocab);
  if (!table.ok()) return absl::InvalidArgumentError(table.status().message());
  return FromTable(version, *std::move(table));
}

absl::StatusOr<std::shared_ptr<const RouterTables>> RouterTablesFromScores(
    int64_t version, const std::string& score_bytes, int ranks, uint32_t vocab) {
  absl::StatusOr<planner::PromptScoreTable> table =
      planner::PromptScoreTable::Deserialize(score_bytes);
  if (!table.ok()) return table.status();
  if (table->ranks() != ranks || table->vocab() != vocab) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a prompt-score table for ", table->vocab(), " tokens × ", table->ranks(),
        " ranks; the router serves a ", vocab, "-token vocabulary on ", ranks, " ranks"));
  }
  return FromTable(version, *std::move(table));
}

}  // namespace semmoe::router
