#include "planner/affinity/prompt_score_table.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "planner/affinity/byte_io.h"
#include "planner/affinity/prompt_scores.h"

namespace semmoe::planner {
namespace {

constexpr char kMagic[8] = {'S', 'M', 'P', 'S', 'C', 'O', 'R', '1'};
constexpr size_t kHeader = 8 + 4 + 4 + 4;
const float kStep = -std::log(kPromptScoreFloor) / 65535.0f;

}  // namespace

size_t PromptScoreTable::SerializedSize(uint32_t vocab, int ranks) {
  return kHeader + 2 * static_cast<size_t>(vocab) * static_cast<size_t>(ranks);
}

absl::StatusOr<PromptScoreTable> PromptScoreTable::FromTerms(absl::Span<const float> terms,
                                                             int ranks) {
  if (ranks < 1 || ranks > kMaxRanks || terms.empty() || terms.size() % ranks != 0 ||
      terms.size() / ranks > kMaxVocab) {
    return absl::InvalidArgumentError(absl::StrCat(terms.size(), " terms are not rows of ", ranks,
                                                   " ranks for 1 to ", kMaxVocab, " tokens"));
  }
  PromptScoreTable t;
  t.vocab_ = static_cast<uint32_t>(terms.size() / ranks);
  t.ranks_ = ranks;
  t.step_ = kStep;
  t.q_.resize(terms.size());
  t.terms_.resize(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    if (!(terms[i] <= 0) || !(terms[i] >= -kStep * 65535.5f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("term ", i, " = ", terms[i], " is outside [", -kStep * 65535, ", 0]"));
    }
    const long q = std::lround(-terms[i] / kStep);
    t.q_[i] = static_cast<uint16_t>(std::min(q, 65535L));
    t.terms_[i] = -static_cast<float>(t.q_[i]) * kStep;
  }
  return t;
}

absl::StatusOr<PromptScoreTable> PromptScoreTable::FromAffinity(const TokenAffinity& affinity,
                                                                const Placement& placement,
                                                                uint32_t vocab) {
  if (vocab < 1 || vocab > kMaxVocab) {
    return absl::InvalidArgumentError(
        absl::StrCat("a vocabulary of ", vocab, " tokens (1 to ", kMaxVocab, ")"));
  }
  if (affinity.num_layers() != placement.num_layers() ||
      affinity.num_experts() != placement.num_experts()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the affinity tables (", affinity.num_layers(), " layers × ",
                     affinity.num_experts(), " experts) do not match the placement (",
                     placement.num_layers(), " × ", placement.num_experts(), ")"));
  }
  const int ranks = placement.num_devices();
  return FromTerms(PromptLogTerms(affinity.DpScores(placement, vocab), ranks), ranks);
}

std::string PromptScoreTable::Serialize() const {
  std::string out(kMagic, 8);
  out.reserve(SerializedSize(vocab_, ranks_));
  PutBytes<uint32_t>(out, vocab_);
  PutBytes<uint32_t>(out, static_cast<uint32_t>(ranks_));
  PutBytes<float>(out, step_);
  out.append(reinterpret_cast<const char*>(q_.data()), q_.size() * sizeof(uint16_t));
  return out;
}

absl::StatusOr<PromptScoreTable> PromptScoreTable::Deserialize(absl::string_view bytes) {
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    return absl::InvalidArgumentError("not a prompt-score table (bad magic)");
  }
  ByteReader in(bytes.substr(8), "prompt-score table");
  uint32_t vocab = 0, ranks = 0;
  float step = 0;
  RETURN_IF_ERROR(in.Get(vocab, "the vocabulary size"));
  RETURN_IF_ERROR(in.Get(ranks, "the rank count"));
  RETURN_IF_ERROR(in.Get(step, "the quantisation step"));
  if (vocab < 1 || vocab > kMaxVocab || ranks < 1 || ranks > static_cast<uint32_t>(kMaxRanks)) {
    return absl::InvalidArgumentError(absl::StrCat("prompt-score table of ", vocab, " tokens × ",
                                                   ranks, " ranks (at most ", kMaxVocab, " × ",
                                                   kMaxRanks, ")"));
  }
  if (!(step > 0) || !(step * 65535 <= 100)) {
    return absl::InvalidArgumentError(
        absl::StrCat("prompt-score table: quantisation step ", step, " is not in (0, 100/65535]"));
  }
  const size_t want = SerializedSize(vocab, static_cast<int>(ranks));
  if (bytes.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat("prompt-score table of ", vocab, " × ", ranks,
                                                   " is ", want, " bytes; got ", bytes.size()));
  }
  PromptScoreTable t;
  t.vocab_ = vocab;
  t.ranks_ = static_cast<int>(ranks);
  t.step_ = step;
  t.q_.resize(static_cast<size_t>(vocab) * ranks);
  std::memcpy(t.q_.data(), bytes.data() + kHeader, t.q_.size() * sizeof(uint16_t));
  t.terms_.resize(t.q_.size());
  for (size_t i = 0; i < t.q_.size(); ++i) t.terms_[i] = -static_cast<float>(t.q_[i]) * step;
  return t;
}

}  // namespace semmoe::planner
