#include "engine/forward/testing/forward_check.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/forward/cpu_forward.h"
#include "gtest/gtest.h"

namespace semmoe::engine::forward::testing {
namespace {

using model::ForwardOutput;
using model::LogitsMode;
using model::SequenceInput;

// The reference: each sequence alone, its whole history in one prefill pass (every position's
// logits and routing), on a one-device CpuForward with an arena of its own.
class AloneReference {
 public:
  static constexpr int kPages = 16, kPageSize = 4;  // Histories of up to 64 positions.

  void Init(const model::ModelConfig& config, const model::ModelWeights& weights) {
    config_ = &config;
    auto pages = runtime::PagedKvCache::Create({.num_layers = config.num_layers,
                                                .shape = config.kv_shape(),
                                                .page_size = kPageSize,
                                                .num_pages = kPages});
    ASSERT_TRUE(pages.ok()) << pages.status();
    pages_ = std::move(*pages);
    auto cpu = CpuForward::Create(config, weights, {.num_pages = kPages, .page_size = kPageSize});
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    cpu_ = std::move(*cpu);
  }

  // What `batch` should give, when history[i] holds batch[i]'s sequence before its new tokens.
  void Expect(const std::vector<SequenceInput>& batch,
              const std::vector<std::vector<int32_t>>& history, ForwardOutput& want) {
    int64_t logit_rows = 0;
    for (const SequenceInput& s : batch) {
      logit_rows += s.logits == LogitsMode::kAll    ? static_cast<int64_t>(s.tokens.size())
                    : s.logits == LogitsMode::kLast ? 1
                                                    : 0;
    }
    want.logits.resize(logit_rows, config_->vocab_size);
    want.routing.assign(config_->MoeLayers().size(), model::Routing{.top_k = config_->top_k});
    int64_t row = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const SequenceInput& s = batch[i];
      ASSERT_EQ(static_cast<int>(history[i].size()), s.start_position);
      std::vector<int32_t> all = history[i];
      all.insert(all.end(), s.tokens.begin(), s.tokens.end());
      std::unique_ptr<runtime::PagedSequence> seq = pages_->NewSequence();
      ASSERT_TRUE(pages_->Reserve(*seq, static_cast<int>(all.size())).ok());
      const SequenceInput alone{all, 0, seq.get(), LogitsMode::kAll};
      auto out = cpu_->Forward({&alone, 1}, {.collect_routing = true});
      ASSERT_TRUE(out.ok()) << out.status();
      const int64_t first = s.start_position, n = static_cast<int64_t>(s.tokens.size());
      if (s.logits == LogitsMode::kAll) {
        want.logits.middleRows(row, n) = out->logits.middleRows(first, n);
        row += n;
      } else if (s.logits == LogitsMode::kLast) {
        want.logits.row(row++) = out->logits.row(first + n - 1);
      }
      const int k = config_->top_k;
      for (size_t l = 0; l < want.routing.size(); ++l) {
        const model::Routing& r = out->routing[l];
        model::Routing& w = want.routing[l];
        w.expert_ids.insert(w.expert_ids.end(), r.expert_ids.begin() + first * k,
                            r.expert_ids.begin() + (first + n) * k);
        w.weights.insert(w.weights.end(), r.weights.begin() + first * k,
                         r.weights.begin() + (first + n) * k);
      }
    }
  }

 private:
  const model::ModelConfig* config_ = nullptr;
  std::unique_ptr<runtime::PagedKvCache> pages_;
  std::unique_ptr<CpuForward> cpu_;
};

void ExpectSame(const ForwardFn& candidate, AloneReference& reference,
                const std::vector<SequenceInput>& batch,
                const std::vector<std::vector<int32_t>>& history, const std::string& what,
                const std::function<void(const std::string&, const model::Matrix&,
                                         const model::Matrix&)>& on_logits) {
  ForwardOutput want;
  reference.Expect(batch, history, want);
  if (::testing::Test::HasFatalFailure()) return;
  auto got = candidate(batch, {.collect_routing = true});
  ASSERT_TRUE(got.ok()) << what << ": " << got.status();
  ASSERT_EQ(got->logits.rows(), want.logits.rows()) << what;
  ASSERT_EQ(got->logits.cols(), want.logits.cols()) << what;
  if (on_logits) on_logits(what, got->logits, want.logits);
  if (want.logits.size() > 0) {
    const float scale = want.logits.cwiseAbs().maxCoeff();
    EXPECT_GT(scale, 0.1f) << what;  // Not trivially zero.
    const float diff = (got->logits - want.logits).cwiseAbs().maxCoeff();
    EXPECT_LE(diff, 1e-4f * scale) << what;  // Also fails on NaN (unwritten memory).
  }
  ASSERT_EQ(got->routing.size(), want.routing.size()) << what;
  for (size_t l = 0; l < want.routing.size(); ++l) {
    const model::Routing& a = got->routing[l];
    const model::Routing& b = want.routing[l];
    EXPECT_EQ(a.top_k, b.top_k);
    EXPECT_EQ(a.expert_ids, b.expert_ids) << what << " MoE layer " << l;
    ASSERT_EQ(a.weights.size(), b.weights.size());
    for (size_t i = 0; i < b.weights.size(); ++i) {
      EXPECT_NEAR(a.weights[i], b.weights[i], 1e-5) << what << " MoE layer " << l << " " << i;
    }
  }
}

}  // namespace

void ExpectSameAsCpu(const ForwardFn& candidate, const model::ModelConfig& config,
                     const model::ModelWeights& weights, runtime::PagedKvCache& cache,
                     const std::function<void(const std::string&, const model::Matrix&,
                                              const model::Matrix&)>& on_logits) {
  AloneReference reference;
  reference.Init(config, weights);
  if (::testing::Test::HasFatalFailure()) return;
  const int vocab = config.vocab_size;
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
  std::vector<std::vector<int32_t>> history(prompts.size());  // Per sequence, what its KV holds.
  auto run = [&](const std::vector<SequenceInput>& batch, const std::vector<int>& of,
                 const std::string& what) {
    std::vector<std::vector<int32_t>> before;
    for (int s : of) before.push_back(history[s]);
    ExpectSame(candidate, reference, batch, before, what, on_logits);
    for (size_t i = 0; i < batch.size(); ++i) {
      history[of[i]].insert(history[of[i]].end(), batch[i].tokens.begin(), batch[i].tokens.end());
    }
  };
  // Sequence 0 in two chunks (8 tokens, no logits), 1 whole (last logits), 2 whole (all).
  const absl::Span<const int32_t> p0(prompts[0]);
  run({{p0.subspan(0, 8), 0, seqs[0].get(), LogitsMode::kNone},
       {prompts[1], 0, seqs[1].get(), LogitsMode::kLast},
       {prompts[2], 0, seqs[2].get(), LogitsMode::kAll}},
      {0, 1, 2}, "prefill");
  if (::testing::Test::HasFatalFailure()) return;
  // The rest of sequence 0's prompt next to decode steps of the others.
  const std::vector<int32_t> next = {7, 8};
  run({{p0.subspan(8), 8, seqs[0].get(), LogitsMode::kAll},
       {absl::MakeConstSpan(&next[0], 1), 1, seqs[1].get(), LogitsMode::kLast},
       {absl::MakeConstSpan(&next[1], 1), 30, seqs[2].get(), LogitsMode::kLast}},
      {0, 1, 2}, "chunk + decode");
  if (::testing::Test::HasFatalFailure()) return;
  // Decode steps across page boundaries.
  for (int step = 0; step < 6; ++step) {
    const int32_t token = (step * 13 + 3) % vocab;
    const auto one = absl::MakeConstSpan(&token, 1);
    run({{one, 13 + step, seqs[0].get(), LogitsMode::kLast},
         {one, 2 + step, seqs[1].get(), LogitsMode::kLast},
         {one, 31 + step, seqs[2].get(), LogitsMode::kLast}},
        {0, 1, 2}, absl::StrCat("decode ", step));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace semmoe::engine::forward::testing
