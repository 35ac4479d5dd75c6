#include "planner/autopilot/serving_board.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace semmoe::planner {

absl::Status ServingBoard::Report(ServingState s) {
  if (s.model.empty() || s.group.empty()) {
    return absl::InvalidArgumentError("a serving report needs its model and group");
  }
  if (s.ranks < 0 || s.serving_version < 0 || s.rollout_target < 0 || s.refused_version < 0 ||
      s.completed < 0 || s.failed < 0 || s.local_activations < 0 || s.remote_activations < 0 ||
      s.output_tokens < 0 || !(s.request_seconds >= 0) || std::isinf(s.request_seconds)) {
    return absl::InvalidArgumentError(absl::StrCat("the serving report of group ", s.group,
                                                   " has negative versions or counters"));
  }
  absl::MutexLock lock(&mu_);
  latest_[{s.model, s.group}] = std::move(s);
  return absl::OkStatus();
}

std::vector<ServingState> ServingBoard::Of(const std::string& model, absl::Time now,
                                           absl::Duration fresh) const {
  std::vector<ServingState> out;
  absl::MutexLock lock(&mu_);
  for (auto it = latest_.lower_bound({model, ""}); it != latest_.end() && it->first.first == model;
       ++it) {
    if (now - it->second.at <= fresh) out.push_back(it->second);
  }
  return out;
}

ServingTotals Sum(const std::vector<ServingState>& groups) {
  ServingTotals t;
  for (const ServingState& s : groups) {
    t.completed += s.completed;
    t.failed += s.failed;
    t.local += s.local_activations;
    t.remote += s.remote_activations;
    t.output_tokens += s.output_tokens;
    t.request_seconds += s.request_seconds;
  }
  return t;
}

}  // namespace semmoe::planner
