#include "router/core/load_window.h"

namespace semmoe::router {
namespace {

// now − before, or nullopt when `now` cannot follow `before` (another layer or number of
// experts, or a count lower). What `before` lacks counts as zero: an engine reports its layers'
// per-expert counts only once a pass has run.
std::optional<ExpertLoad> Since(const ExpertLoad& before, const ExpertLoad& now) {
  if (before.served.size() > now.served.size() ||
      before.per_expert.size() > now.per_expert.size()) {
    return std::nullopt;
  }
  ExpertLoad d;
  for (size_t i = 0; i < now.served.size(); ++i) {
    const auto& [layer, count] = now.served[i];
    int64_t was = 0;
    if (i < before.served.size()) {
      if (before.served[i].first != layer) return std::nullopt;
      was = before.served[i].second;
    }
    if (was > count) return std::nullopt;
    d.served.emplace_back(layer, count - was);
  }
  for (size_t i = 0; i < now.per_expert.size(); ++i) {
    const auto& [layer, counts] = now.per_expert[i];
    std::vector<int64_t> delta = counts;
    if (i < before.per_expert.size()) {
      const auto& [before_layer, before_counts] = before.per_expert[i];
      if (before_layer != layer) return std::nullopt;
      if (!before_counts.empty()) {
        if (before_counts.size() != counts.size()) return std::nullopt;
        for (size_t e = 0; e < counts.size(); ++e) {
          if (before_counts[e] > counts[e]) return std::nullopt;
          delta[e] = counts[e] - before_counts[e];
        }
      }
    }
    d.per_expert.emplace_back(layer, std::move(delta));
  }
  return d;
}

}  // namespace

LoadWindow::Windowed LoadWindow::Observe(absl::Time now, const ExpertLoad& cumulative) {
  std::optional<ExpertLoad> since;
  if (base_.has_value()) since = Since(base_->load, cumulative);
  if (!since.has_value()) {  // The first observation, or the rank started anew.
    base_ = Snapshot{now, cumulative};
    mid_.reset();
    return {cumulative, absl::ZeroDuration()};
  }
  Windowed out{*std::move(since), now - base_->at};
  const absl::Duration half = window_ / 2;
  if (mid_.has_value() && now - mid_->at >= half) {
    base_ = std::move(mid_);
    mid_.reset();
  }
  if (!mid_.has_value() && now - base_->at >= half) mid_ = Snapshot{now, cumulative};
  return out;
}

}  // namespace semmoe::router
