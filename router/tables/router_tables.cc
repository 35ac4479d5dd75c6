#include "router/tables/router_tables.h"

#include "absl/strings/str_cat.h"
#include "planner/affinity/prompt_scores.h"
#include "planner/affinity/token_affinity.h"
#include "planner/placement/placement.h"

namespace semmoe::router {

std::vector<double> RouterTables::Fit(absl::Span<const int32_t> prompt) const {
  std::vector<double> out(ranks);
  planner::SumPromptLogTerms<int32_t>(prompt, log_terms, ranks, absl::MakeSpan(out));
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
  if (affinity->num_layers() != placement->num_layers() ||
      affinity->num_experts() != placement->num_experts()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the affinity tables (", affinity->num_layers(), " layers × ",
                     affinity->num_experts(), " experts) do not match the placement (",
                     placement->num_layers(), " × ", placement->num_experts(), ")"));
  }
  auto tables = std::make_shared<RouterTables>();
  tables->version = version;
  tables->ranks = ranks;
  tables->vocab = vocab;
  tables->dp_scores = affinity->DpScores(*placement, vocab);
  tables->log_terms = planner::PromptLogTerms(tables->dp_scores, ranks);
  return std::shared_ptr<const RouterTables>(std::move(tables));
}

}  // namespace semmoe::router
