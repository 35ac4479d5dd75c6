// How well a prompt fits each device under a placement, from the DP scores S
// (TokenAffinity::DpScores: per token id, its expected local activations per device): the
// log-likelihood Σ over the prompt's tokens of log p(device | token), p being the token's row of
// S normalised, floored at 0.01. The planner's evaluation (eval/schedule.h) and the router use
// this same rule. Summing raw scores instead lets frequent, uninformative tokens decide (held-out
// DP LAR at G = 8: 0.224 with sums, 0.246 with this).
#ifndef SEMMOE_PLANNER_AFFINITY_PROMPT_SCORES_H_
#define SEMMOE_PLANNER_AFFINITY_PROMPT_SCORES_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace semmoe::planner {

inline constexpr float kPromptScoreFloor = 0.01f;

// The per-token terms of the rule, row-major [vocab, devices]: log max(share, floor), a row of
// zeros for a token without scores. Precomputed once per table, a prompt's scores are sums.
inline std::vector<float> PromptLogTerms(absl::Span<const float> scores, int devices) {
  std::vector<float> terms(scores.size(), 0.0f);
  const size_t vocab = scores.size() / static_cast<size_t>(devices);
  for (size_t v = 0; v < vocab; ++v) {
    const float* row = &scores[v * devices];
    float total = 0;
    for (int d = 0; d < devices; ++d) total += row[d];
    if (!(total > 0)) continue;
    for (int d = 0; d < devices; ++d) {
      terms[v * devices + d] = std::log(std::max(row[d] / total, kPromptScoreFloor));
    }
  }
  return terms;
}

// Σ over the prompt's tokens of their terms; tokens outside [0, vocab) add nothing. Writes one
// value per device to `out` (out.size() == devices).
template <typename Token>
void SumPromptLogTerms(absl::Span<const Token> tokens, absl::Span<const float> terms, int devices,
                       absl::Span<double> out) {
  std::fill(out.begin(), out.end(), 0.0);
  const size_t vocab = terms.size() / static_cast<size_t>(devices);
  for (Token token : tokens) {
    if (token < 0 || static_cast<size_t>(token) >= vocab) continue;
    const float* row = &terms[static_cast<size_t>(token) * devices];
    for (int d = 0; d < devices; ++d) out[d] += row[d];
  }
}

// The prompt's expected share of activations per device, from the same terms: the mean over its
// tokens of each token's shares (exp of its terms, renormalised: the floor lifts shares below
// it), a token without scores counting as uniform. Writes one value per device to `out`
// (summing to 1); uniform for a prompt without tokens in [0, vocab). What the router's time
// rule (planner/sim/step_predictor.h) predicts a request's traffic from.
template <typename Token>
void PromptShares(absl::Span<const Token> tokens, absl::Span<const float> terms, int devices,
                  absl::Span<double> out) {
  std::fill(out.begin(), out.end(), 0.0);
  const size_t vocab = terms.size() / static_cast<size_t>(devices);
  std::vector<double> row(devices);
  int64_t counted = 0;
  for (Token token : tokens) {
    if (token < 0 || static_cast<size_t>(token) >= vocab) continue;
    const float* t = &terms[static_cast<size_t>(token) * devices];
    double total = 0;
    for (int d = 0; d < devices; ++d) total += row[d] = std::exp(static_cast<double>(t[d]));
    for (int d = 0; d < devices; ++d) out[d] += row[d] / total;
    ++counted;
  }
  for (int d = 0; d < devices; ++d) {
    out[d] = counted > 0 ? out[d] / static_cast<double>(counted) : 1.0 / devices;
  }
}

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_AFFINITY_PROMPT_SCORES_H_
