#include "engine/forward/testing/forward_check.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace semmoe::engine::forward::testing {
namespace {

using model::LogitsMode;
using model::SequenceInput;

void ExpectSame(const ForwardFn& candidate, const model::Transformer& reference,
                const std::vector<SequenceInput>& batch, const std::string& what,
                const std::function<void(const std::string&, const model::Matrix&,
                                         const model::Matrix&)>& on_logits) {
  auto want = reference.Forward(batch, {.collect_routing = true});
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = candidate(batch, {.collect_routing = true});
  ASSERT_TRUE(got.ok()) << what << ": " << got.status();
  ASSERT_EQ(got->logits.rows(), want->logits.rows()) << what;
  ASSERT_EQ(got->logits.cols(), want->logits.cols()) << what;
  if (on_logits) on_logits(what, got->logits, want->logits);
  if (want->logits.size() > 0) {
    const float scale = want->logits.cwiseAbs().maxCoeff();
    EXPECT_GT(scale, 0.1f) << what;  // Not trivially zero.
    const float diff = (got->logits - want->logits).cwiseAbs().maxCoeff();
    EXPECT_LE(diff, 1e-4f * scale) << what;  // Also fails on NaN (unwritten memory).
  }
  ASSERT_EQ(got->routing.size(), want->routing.size()) << what;
  for (size_t l = 0; l < want->routing.size(); ++l) {
    const model::Routing& a = got->routing[l];
    const model::Routing& b = want->routing[l];
    EXPECT_EQ(a.top_k, b.top_k);
    EXPECT_EQ(a.expert_ids, b.expert_ids) << what << " MoE layer " << l;
    ASSERT_EQ(a.weights.size(), b.weights.size());
    for (size_t i = 0; i < b.weights.size(); ++i) {
      EXPECT_NEAR(a.weights[i], b.weights[i], 1e-5) << what << " MoE layer " << l << " " << i;
    }
  }
}

}  // namespace

void ExpectSameAsCpu(const ForwardFn& candidate, const model::Transformer& reference,
                     runtime::PagedKvCache& cache,
                     const std::function<void(const std::string&, const model::Matrix&,
                                              const model::Matrix&)>& on_logits) {
  const int vocab = reference.config().vocab_size;
  const std::vector<int> lengths = {13, 1, 30};  // Ragged; pages of 4: partial last pages.
  std::vector<std::vector<int32_t>> prompts(lengths.size());
  for (size_t s = 0; s < prompts.size(); ++s) {
    for (int t = 0; t < lengths[s]; ++t) prompts[s].push_back((17 * t + 31 * s + 5) % vocab);
  }
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
  for (size_t s = 0; s < prompts.size(); ++s) {
    seqs.push_back(cache.NewSequence());
    ASSERT_TRUE(cache.Reserve(*seqs.back(), 64).ok());
  }
  // Sequence 0 in two chunks (8 tokens, no logits), 1 whole (last logits), 2 whole (all).
  const absl::Span<const int32_t> p0(prompts[0]);
  ExpectSame(candidate, reference,
             {{p0.subspan(0, 8), 0, seqs[0].get(), LogitsMode::kNone},
              {prompts[1], 0, seqs[1].get(), LogitsMode::kLast},
              {prompts[2], 0, seqs[2].get(), LogitsMode::kAll}},
             "prefill", on_logits);
  // The rest of sequence 0's prompt next to decode steps of the others.
  const std::vector<int32_t> next = {7, 8};
  ExpectSame(candidate, reference,
             {{p0.subspan(8), 8, seqs[0].get(), LogitsMode::kAll},
              {absl::MakeConstSpan(&next[0], 1), 1, seqs[1].get(), LogitsMode::kLast},
              {absl::MakeConstSpan(&next[1], 1), 30, seqs[2].get(), LogitsMode::kLast}},
             "chunk + decode", on_logits);
  // Decode steps across page boundaries.
  for (int step = 0; step < 6; ++step) {
    const int32_t token = (step * 13 + 3) % vocab;
    const auto one = absl::MakeConstSpan(&token, 1);
    ExpectSame(candidate, reference,
               {{one, 13 + step, seqs[0].get(), LogitsMode::kLast},
                {one, 2 + step, seqs[1].get(), LogitsMode::kLast},
                {one, 31 + step, seqs[2].get(), LogitsMode::kLast}},
               absl::StrCat("decode ", step), on_logits);
  }
}

}  // namespace semmoe::engine::forward::testing
