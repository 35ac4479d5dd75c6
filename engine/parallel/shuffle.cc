#include "engine/parallel/shuffle.h"

#include <algorithm>
#include <numeric>

#include "planner/placement/balanced_assign.h"

namespace semmoe::engine {

int64_t ShufflePlan::begin(int rank) const {
  int64_t at = 0;
  for (int r = 0; r < rank; ++r) at += counts[r];
  return at;
}

ShufflePlan PlainShuffle(int64_t tokens, int ranks) {
  ShufflePlan plan;
  plan.order.resize(tokens);
  std::iota(plan.order.begin(), plan.order.end(), 0);
  plan.counts = planner::EqualChunks(tokens, ranks);
  return plan;
}

ShufflePlan PlanShuffle(absl::Span<const float> scores, int ranks, double slack) {
  const int64_t tokens = static_cast<int64_t>(scores.size()) / ranks;
  ShufflePlan plan;
  const std::vector<int32_t> chunk_of = planner::AssignBalanced(scores, ranks, slack);
  plan.counts.assign(ranks, 0);
  for (int32_t r : chunk_of) ++plan.counts[r];
  std::vector<int64_t> fill(ranks, 0);
  for (int r = 1; r < ranks; ++r) fill[r] = fill[r - 1] + plan.counts[r - 1];
  plan.order.resize(tokens);
  for (int32_t t = 0; t < tokens; ++t) plan.order[fill[chunk_of[t]]++] = t;
  return plan;
}

}  // namespace semmoe::engine
