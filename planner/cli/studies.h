// Planner studies over a profile and held-out traces, printed by `planner eval`:
//   --pareto     LAR against expert-load imbalance for attention-DP, one semantic co-schedule
//                balanced at a grid of caps (solver/balance_curve.h), with the MoE time model
//                and the cap `planner build` would choose;
//   --zero_shot  profile on each domain, evaluate on each (DP with the router's rule, TP with
//                the SRS rule): how a placement planned for one kind of traffic serves another.
#ifndef SEMMOE_PLANNER_CLI_STUDIES_H_
#define SEMMOE_PLANNER_CLI_STUDIES_H_

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/eval/evaluate.h"

namespace semmoe::planner::cli {

struct StudyOptions {
  std::vector<std::string> profile;  // Traces the placements are planned from.
  std::vector<std::string> traces;   // Held-out traces they are evaluated on.
  int devices = 8;
  double token_balance_eps = 0.05;
  double link_cost = planner::EvalOptions::kLinkCost;
  int balance_groups = 1;
  // JSONL with "id" and "domain" per request (e.g. the prompts file the trace was made from);
  // a request not listed takes its name up to the first '-' as its domain.
  std::string domains;
  bool json = false;
  uint64_t seed = 0;
};

absl::Status Pareto(const StudyOptions& options, std::ostream& out);
// --domains: request id → domain; an empty path gives an empty map. Errors name the file and
// line.
absl::StatusOr<std::map<std::string, std::string>> ReadDomains(const std::string& path);
absl::Status ZeroShot(const StudyOptions& options, std::ostream& out);

}  // namespace semmoe::planner::cli

#endif  // SEMMOE_PLANNER_CLI_STUDIES_H_
