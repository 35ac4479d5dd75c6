#include "engine/forward/testing/ep_group_scenario.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/forward/cpu_forward.h"
#include "engine/runtime/kv_cache.h"
#include "gtest/gtest.h"

namespace semmoe::engine::forward::testing {

using model::LogitsMode;
using model::SequenceInput;

RankExpectation RunRankScenario(const model::ModelConfig& c, const model::ModelWeights& weights,
                                const planner::Placement& placement, int rank, int ranks,
                                const RankForward& forward) {
  RankExpectation expected;
  const int moe_layers = static_cast<int>(c.MoeLayers().size());
  // The single device: the CPU forward with every expert, its arena indexed by the same page
  // tables as the rank's.
  auto reference = CpuForward::Create(
      c, weights, {.num_pages = kScenarioPages, .page_size = kScenarioPageSize});
  EXPECT_TRUE(reference.ok()) << reference.status();
  auto cache = runtime::PagedKvCache::Create({.num_layers = c.num_layers,
                                              .shape = c.kv_shape(),
                                              .page_size = kScenarioPageSize,
                                              .num_pages = kScenarioPages});
  EXPECT_TRUE(cache.ok());
  if (!reference.ok() || !cache.ok()) return expected;
  // Two sequences per rank, ragged.
  std::vector<std::vector<int32_t>> prompts(2);
  for (int s = 0; s < 2; ++s) {
    for (int t = 0; t < 3 + 5 * s + 2 * rank; ++t) {
      prompts[s].push_back((13 * t + 29 * s + 41 * rank + 3) % c.vocab_size);
    }
  }
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
  for (int s = 0; s < 2; ++s) {
    seqs.push_back((*cache)->NewSequence());
    EXPECT_TRUE((*cache)->Reserve(*seqs.back(), 40).ok());
  }
  const bool late = rank == ranks - 1;
  std::vector<int32_t> next(2, 5);
  for (int pass = 0; pass < 5; ++pass) {
    std::vector<SequenceInput> batch;
    if (pass == 0 && !late) {
      batch = {{prompts[0], 0, seqs[0].get(), LogitsMode::kAll},
               {prompts[1], 0, seqs[1].get(), LogitsMode::kLast}};
    } else if (pass == 1 && late) {
      batch = {{prompts[0], 0, seqs[0].get(), LogitsMode::kLast},
               {prompts[1], 0, seqs[1].get(), LogitsMode::kAll}};
    } else if (pass >= 1) {
      const int started = late ? 2 : 1;
      if (pass >= started) {
        for (int s = 0; s < 2; ++s) {
          const int position = static_cast<int>(prompts[s].size()) + pass - started;
          batch.push_back({absl::MakeConstSpan(&next[s], 1), position, seqs[s].get()});
        }
      }
    }
    const std::string what = absl::StrCat("rank ", rank, " pass ", pass);
    auto got = forward(batch, {.collect_routing = true});
    EXPECT_TRUE(got.ok()) << what << ": " << got.status();
    if (!got.ok()) return expected;  // The group's collectives are out of step from here.
    if (batch.empty()) {  // An idle rank still joins the exchange.
      EXPECT_EQ(got->logits.rows(), 0) << what;
      continue;
    }
    auto want = (*reference)->Forward(batch, {.collect_routing = true});
    EXPECT_TRUE(want.ok()) << want.status();
    if (!want.ok()) return expected;
    EXPECT_EQ(got->logits.rows(), want->logits.rows()) << what;
    if (got->logits.rows() != want->logits.rows()) continue;
    const float scale = want->logits.cwiseAbs().maxCoeff();
    EXPECT_LE((got->logits - want->logits).cwiseAbs().maxCoeff(), 1e-4f * scale) << what;
    EXPECT_EQ(got->routing.size(), want->routing.size()) << what;
    if (got->routing.size() != want->routing.size()) continue;
    int64_t local = 0, all = 0;
    for (int l = 0; l < moe_layers; ++l) {
      EXPECT_EQ(got->routing[l].expert_ids, want->routing[l].expert_ids) << what;
      for (int32_t e : want->routing[l].expert_ids) {
        ++all;
        local += placement.Serving(l, e, rank) == rank;
      }
    }
    EXPECT_EQ(got->activations.size(), batch.size()) << what;
    int64_t got_local = 0, got_all = 0;
    for (size_t s = 0; s < got->activations.size(); ++s) {
      got_local += got->local_activations[s];
      got_all += got->activations[s];
    }
    EXPECT_EQ(got_all, all) << what;
    EXPECT_EQ(got_local, local) << what;
    expected.local_activations += local;
    expected.tokens += got->routing[0].tokens();
  }
  return expected;
}

void CheckGroupCounters(const model::ModelConfig& c,
                        const std::vector<std::vector<MoeLayerCounters>>& counters,
                        const std::vector<RankExpectation>& expected, bool nodes) {
  const int g = static_cast<int>(counters.size());
  const int moe_layers = static_cast<int>(c.MoeLayers().size());
  ASSERT_EQ(expected.size(), counters.size());
  for (int l = 0; l < moe_layers; ++l) {
    int64_t sent = 0, received = 0, back_sent = 0, back_received = 0, cross_sent = 0,
            cross_received = 0;
    for (int r = 0; r < g; ++r) {
      ASSERT_GT(counters[r].size(), static_cast<size_t>(l)) << "rank " << r;
      const MoeLayerCounters& m = counters[r][l];
      EXPECT_EQ(m.tokens, expected[r].tokens) << "rank " << r << " MoE layer " << l;
      EXPECT_EQ(m.local_activations + m.remote_activations, m.tokens * c.top_k);
      sent += m.dispatch_bytes_sent;
      received += m.dispatch_bytes_received;
      back_sent += m.combine_bytes_sent;
      back_received += m.combine_bytes_received;
      cross_sent += m.cross_node_bytes_sent;
      cross_received += m.cross_node_bytes_received;
    }
    EXPECT_EQ(sent, received) << "MoE layer " << l;
    EXPECT_EQ(back_sent, back_received) << "MoE layer " << l;
    EXPECT_EQ(cross_sent, cross_received) << "MoE layer " << l;
    EXPECT_GT(sent, 0) << "MoE layer " << l;
    if (nodes) {
      EXPECT_GT(cross_sent, 0) << "MoE layer " << l;
    }
  }
  for (int r = 0; r < g; ++r) {
    int64_t local = 0;
    for (const MoeLayerCounters& m : counters[r]) local += m.local_activations;
    EXPECT_EQ(local, expected[r].local_activations) << "rank " << r;
  }
}

}  // namespace semmoe::engine::forward::testing
