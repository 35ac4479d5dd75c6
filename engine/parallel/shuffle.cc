#include "engine/parallel/shuffle.h"

#include <algorithm>
#include <numeric>

namespace semmoe::engine {
namespace {

std::vector<int64_t> EqualCounts(int64_t tokens, int ranks) {
  std::vector<int64_t> counts(ranks, tokens / ranks);
  for (int r = 0; r < tokens % ranks; ++r) ++counts[r];
  return counts;
}

}  // namespace

int64_t ShufflePlan::begin(int rank) const {
  int64_t at = 0;
  for (int r = 0; r < rank; ++r) at += counts[r];
  return at;
}

ShufflePlan PlainShuffle(int64_t tokens, int ranks) {
  ShufflePlan plan;
  plan.order.resize(tokens);
  std::iota(plan.order.begin(), plan.order.end(), 0);
  plan.counts = EqualCounts(tokens, ranks);
  return plan;
}

ShufflePlan PlanShuffle(absl::Span<const int32_t> device, absl::Span<const float> confidence,
                        int ranks) {
  const int64_t tokens = static_cast<int64_t>(device.size());
  ShufflePlan plan;
  plan.counts = EqualCounts(tokens, ranks);
  // Most confident first; ties (and the unpredicted, last) in batch order.
  std::vector<int32_t> by_confidence(tokens);
  std::iota(by_confidence.begin(), by_confidence.end(), 0);
  auto key = [&](int32_t t) { return device[t] < 0 ? -1.0f : confidence[t]; };
  std::stable_sort(by_confidence.begin(), by_confidence.end(),
                   [&](int32_t a, int32_t b) { return key(a) > key(b); });
  std::vector<int64_t> room = plan.counts;
  std::vector<int32_t> chunk_of(tokens);
  for (int32_t t : by_confidence) {
    int d = device[t];
    if (d < 0 || d >= ranks || room[d] == 0) {
      d = static_cast<int>(std::max_element(room.begin(), room.end()) - room.begin());
    }
    chunk_of[t] = d;
    --room[d];
  }
  std::vector<int64_t> fill(ranks, 0);
  for (int r = 1; r < ranks; ++r) fill[r] = fill[r - 1] + plan.counts[r - 1];
  plan.order.resize(tokens);
  for (int32_t t = 0; t < tokens; ++t) plan.order[fill[chunk_of[t]]++] = t;
  return plan;
}

}  // namespace semmoe::engine
