#include "engine/runtime/sampler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace semmoe::engine::runtime {

absl::Status ValidateSamplingParams(const SamplingParams& p) {
  if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature)) {
    return absl::InvalidArgumentError(absl::StrCat("temperature must be >= 0, got ", p.temperature));
  }
  if (p.top_k < 0) return absl::InvalidArgumentError(absl::StrCat("top_k must be >= 0, got ", p.top_k));
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("top_p must be in (0, 1], got ", p.top_p));
  }
  return absl::OkStatus();
}

int32_t Sampler::Sample(absl::Span<const float> logits) {
  if (params_.temperature == 0.0f) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  scratch_.clear();
  for (int32_t i = 0; i < static_cast<int32_t>(logits.size()); ++i) {
    scratch_.emplace_back(logits[i] / params_.temperature, i);
  }
  // Most likely first; ties by id so the order (and hence the draw) is deterministic.
  auto by_logit = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  size_t keep = scratch_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < keep) {
    keep = params_.top_k;
    std::partial_sort(scratch_.begin(), scratch_.begin() + keep, scratch_.end(), by_logit);
  } else {
    std::sort(scratch_.begin(), scratch_.end(), by_logit);
  }
  const float max = scratch_[0].first;
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += (scratch_[i].first = std::exp(scratch_[i].first - max));
  if (params_.top_p < 1.0f) {
    double cumulative = 0;
    for (size_t i = 0; i < keep; ++i) {
      cumulative += scratch_[i].first;
      if (cumulative >= params_.top_p * total) {
        keep = i + 1;
        total = cumulative;
        break;
      }
    }
  }
  const double u = std::uniform_real_distribution<double>(0.0, total)(rng_);
  double cumulative = 0;
  for (size_t i = 0; i < keep; ++i) {
    cumulative += scratch_[i].first;
    if (u < cumulative) return scratch_[i].second;
  }
  return scratch_[keep - 1].second;
}

}  // namespace semmoe::engine::runtime
