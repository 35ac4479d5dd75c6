// PromptScoreTable: everything a router scores prompts with, and nothing more — per token id and
// rank, the term a prompt's fit to that rank sums (prompt_scores.h: log max(share, floor) of
// the token's DP scores S under a placement). vocab × ranks values, stored as 16 bits each:
// 2.4 MB for a 151,936-token vocabulary at G = 8, where the full affinity tables it is computed
// from are tens to hundreds of MB. Routers get this, never the full tables.
//
// Every path builds it the same way (FromAffinity, then quantised), so a router reading fixed
// files places exactly as one fed by the planner.
#ifndef SEMMOE_PLANNER_AFFINITY_PROMPT_SCORE_TABLE_H_
#define SEMMOE_PLANNER_AFFINITY_PROMPT_SCORE_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "planner/affinity/token_affinity.h"
#include "planner/placement/placement.h"

namespace semmoe::planner {

class PromptScoreTable {
 public:
  // The table of `placement` for token ids [0, vocab): the affinity's DP scores, their
  // prompt-score terms, quantised. InvalidArgument when the affinity and placement disagree on
  // layers or experts, or for a vocabulary outside [1, kMaxVocab].
  static absl::StatusOr<PromptScoreTable> FromAffinity(const TokenAffinity& affinity,
                                                       const Placement& placement, uint32_t vocab);
  // From terms (row-major [vocab, ranks], each in [log floor, 0]), quantised.
  static absl::StatusOr<PromptScoreTable> FromTerms(absl::Span<const float> terms, int ranks);

  static constexpr uint32_t kMaxVocab = 1u << 22;
  static constexpr int kMaxRanks = 4096;

  uint32_t vocab() const { return vocab_; }
  int ranks() const { return ranks_; }
  // Dequantised terms, row-major [vocab, ranks]: what planner::SumPromptLogTerms sums.
  const std::vector<float>& terms() const { return terms_; }
  // Moves the terms out (the table keeps its bytes: Serialize still works).
  std::vector<float> TakeTerms() && { return std::move(terms_); }

  // "SMPSCOR1" | u32 vocab | u32 ranks | f32 step | u16 q[vocab × ranks]; term = −q × step, step
  // = −log(floor) / 65535 (so every representable term is exact to ±step/2 ≈ 3.5e-5).
  std::string Serialize() const;
  // InvalidArgument naming what is malformed (never a crash), for any bytes.
  static absl::StatusOr<PromptScoreTable> Deserialize(absl::string_view bytes);
  // Serialize().size() for a vocabulary and rank count.
  static size_t SerializedSize(uint32_t vocab, int ranks);

 private:
  uint32_t vocab_ = 0;
  int ranks_ = 0;
  float step_ = 0;
  std::vector<uint16_t> q_;
  std::vector<float> terms_;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_AFFINITY_PROMPT_SCORE_TABLE_H_
