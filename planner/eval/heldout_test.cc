// End to end on the planner side: learn a placement and token affinity from one half of the
// shared model's reference trace, schedule the other (held-out) half with the router's rule, and
// compare with the baselines and the bound.
#include <algorithm>
#include <iostream>
#include <string>
#include <utility>

#include "common/file.h"
#include "common/testing/shared_data.h"
#include "gtest/gtest.h"
#include "planner/affinity/layer_affinity.h"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/eval/evaluate.h"
#include "planner/eval/schedule.h"
#include "planner/placement/balanced_assign.h"
#include "planner/solver/baselines.h"
#include "planner/solver/dp_solver.h"
#include "planner/solver/tp_solver.h"
#include "planner/trace/array_trace.h"

namespace semmoe::planner {
namespace {

using trace::TraceSet;

TraceSet Half(const TraceSet& all, int parity) {
  TraceSet half;
  half.header = all.header;
  const size_t per = static_cast<size_t>(all.num_layers()) * all.top_k();
  for (int r = parity; r < all.num_requests(); r += 2) {
    const int64_t b = all.request_begin[r], e = all.request_begin[r + 1];
    std::vector<uint32_t> tokens(all.tokens.begin() + b, all.tokens.begin() + e);
    std::vector<uint16_t> experts(all.experts.begin() + b * per, all.experts.begin() + e * per);
    EXPECT_TRUE(half.AddRequest(all.request_names[r], tokens, experts).ok());
  }
  return half;
}

TEST(HeldOutTest, SemanticDpBeatsBaselinesOnHeldOutPrompts) {
  SEMMOE_REQUIRE_SHARED_DIR(shared);
  auto all = trace::ImportArrayTrace(JoinPath(shared, "models/qwen3-moe-a/reference/trace"));
  ASSERT_TRUE(all.ok()) << all.status();
  const TraceSet profile = Half(*all, 0), heldout = Half(*all, 1);
  const std::vector<int> layers = {0, 1, 2, 3};
  const uint32_t vocab = 4096;
  for (int g : {4, 8}) {
    auto sol = SolveDp(profile, {.num_devices = g, .starts = 2, .seed = 1});
    ASSERT_TRUE(sol.ok()) << sol.status();
    const TokenAffinity affinity = BuildTokenAffinity(profile);
    const Placement vanilla = *Placement::Vanilla(layers, 32, g);
    const Placement random = *Placement::Random(layers, 32, g, 7);
    auto eval = [&](const Placement& p, const std::vector<int>& schedule) {
      return EvaluateDp(heldout, p, schedule)->lar;
    };
    const std::vector<int> rr = RoundRobinRequests(heldout, g);
    const double v_rr = eval(vanilla, rr), r_rr = eval(random, rr);
    const double v_aff =
        eval(vanilla, AffinityRequests(heldout, affinity.DpScores(vanilla, vocab), g));
    const double s_rr = eval(sol->placement, rr);
    // The other baselines, each with the router's affinity rule (their best data policy).
    double best_baseline = std::max(v_aff, std::max(v_rr, r_rr));
    for (const auto& [name, placement] :
         {std::pair<std::string, Placement>{"eplb", *EplbPlacement(profile, g)},
          std::pair<std::string, Placement>{"coact", *CoactPlacement(profile, g)},
          std::pair<std::string, Placement>{"random", random}}) {
      const double with_rr = eval(placement, rr);
      const double with_aff =
          eval(placement, AffinityRequests(heldout, affinity.DpScores(placement, vocab), g));
      std::cout << "G=" << g << " held-out DP LAR " << name << ": round-robin " << with_rr
                << ", affinity " << with_aff << "\n";
      best_baseline = std::max(best_baseline, std::max(with_rr, with_aff));
    }
    const std::vector<int> s_sched =
        AffinityRequests(heldout, affinity.DpScores(sol->placement, vocab), g);
    auto s = EvaluateDp(heldout, sol->placement, s_sched);
    const double bound = DpRequestBound(heldout, g);
    std::cout << "G=" << g << " held-out DP LAR: vanilla+round-robin " << v_rr
              << ", random+round-robin " << r_rr << ", vanilla+affinity " << v_aff
              << ", semantic+round-robin " << s_rr << ", semantic+affinity " << s->lar
              << " (token imbalance " << s->token_load_imbalance << "); bound " << bound << " → "
              << 100 * s->lar / bound << "% of it (in-sample " << sol->lar << ")\n";
    // How far the bound is from what co-scheduling can reach at all: the solver fitted to the
    // held-out half itself (placement and schedule both see the data they are scored on). Held
    // out, with the schedule predicted from prompts, cannot do better than this, so the gap
    // between it and the bound belongs to the bound (docs/PLANNER.md).
    auto ceiling =
        SolveDp(heldout, {.num_devices = g, .starts = 16, .seed = 1, .router_rounds = 0});
    ASSERT_TRUE(ceiling.ok()) << ceiling.status();
    std::cout << "G=" << g
              << " DP co-scheduling fitted to the held-out half itself: " << ceiling->lar << " → "
              << 100 * ceiling->lar / bound << "% of the bound\n";
    EXPECT_LE(ceiling->lar, bound);
    EXPECT_GT(ceiling->lar, s->lar);
    EXPECT_GT(s->lar, best_baseline);
    EXPECT_GT(s->lar, v_aff);
    EXPECT_GT(s->lar, v_rr);
    EXPECT_GT(s->lar, r_rr);
    EXPECT_LE(s->lar, bound);
    EXPECT_LE(s->token_load_imbalance, 1.05 + 1e-9);
  }
}

// SRS's rule with each token's true expert shares as its scores.
std::vector<std::vector<int>> PerfectSrs(const TraceSet& trace, const Placement& placement,
                                         int batch, double slack) {
  const int g = placement.num_devices();
  std::vector<std::vector<int>> device(trace.num_layers(), std::vector<int>(trace.num_tokens()));
  for (int l = 0; l < trace.num_layers(); ++l) {
    for (int64_t start = 0; start < trace.num_tokens(); start += batch) {
      const int b = static_cast<int>(std::min<int64_t>(batch, trace.num_tokens() - start));
      std::vector<float> scores(static_cast<size_t>(b) * g, 0.0f);
      for (int i = 0; i < b; ++i) {
        const uint16_t* experts = trace.Experts(start + i, l);
        for (int j = 0; j < trace.top_k(); ++j) {
          scores[static_cast<size_t>(i) * g + placement.Device(l, experts[j])] += 1.0f;
        }
      }
      const std::vector<int32_t> assigned = AssignBalanced(scores, g, slack);
      for (int i = 0; i < b; ++i) device[l][start + i] = assigned[i];
    }
  }
  return device;
}

TEST(HeldOutTest, SemanticTpOnHeldOutPrompts) {
  SEMMOE_REQUIRE_SHARED_DIR(shared);
  auto all = trace::ImportArrayTrace(JoinPath(shared, "models/qwen3-moe-a/reference/trace"));
  ASSERT_TRUE(all.ok()) << all.status();
  const TraceSet profile = Half(*all, 0), heldout = Half(*all, 1);
  const std::vector<int> layers = {0, 1, 2, 3};
  const TokenAffinity affinity = BuildTokenAffinity(profile);
  const int batch = 256;
  const double slack = 0.05;  // Token load per device per batch ≤ 1.05 × the mean.
  for (int g : {4, 8}) {
    auto semantic = SolveTp(profile, {.num_devices = g, .starts = 2, .seed = 1});
    ASSERT_TRUE(semantic.ok()) << semantic.status();
    double best_baseline = 0, vanilla_srs = 0;
    for (const auto& [name, placement] :
         {std::pair<std::string, Placement>{"vanilla", *Placement::Vanilla(layers, 32, g)},
          std::pair<std::string, Placement>{"random", *Placement::Random(layers, 32, g, 7)},
          std::pair<std::string, Placement>{"eplb", *EplbPlacement(profile, g)},
          std::pair<std::string, Placement>{"coact", *CoactPlacement(profile, g)},
          std::pair<std::string, Placement>{"semantic", *semantic}}) {
      const double blind = EvaluateTp(heldout, placement, ContiguousChunks(heldout, g, batch))->lar;
      auto srs = EvaluateTp(heldout, placement,
                            SrsTokens(heldout, affinity, placement, batch, nullptr, slack));
      // The A table with a naive confidence comparison (reported, not yet better: PLANNER.md).
      const LayerAffinity layer_affinity = LayerAffinity::Build(profile, placement);
      auto srs_a =
          EvaluateTp(heldout, placement,
                     SrsTokens(heldout, affinity, placement, batch, &layer_affinity, slack));
      const double oracle = TpTokenOracle(heldout, placement);
      // The same rule fed the truth (each token's real share of experts per device): what
      // perfect prediction would reach under the balance limit — the balance costs this much.
      const double perfect =
          EvaluateTp(heldout, placement, PerfectSrs(heldout, placement, batch, slack))->lar;
      const double balanced = TpBalancedBound(heldout, placement, batch, slack);
      std::cout << "G=" << g << " held-out TP LAR " << name << ": contiguous " << blind
                << ", SRS (T) " << srs->lar << ", SRS (T or A) " << srs_a->lar
                << " (token imbalance " << srs->token_load_imbalance
                << "); oracle for this placement " << oracle << " → " << 100 * srs->lar / oracle
                << "%; perfect prediction, balanced " << perfect << " (" << 100 * perfect / oracle
                << "% of the oracle); balanced bound " << balanced << " → SRS at "
                << 100 * srs->lar / balanced << "% of it\n";
      EXPECT_LE(perfect, balanced + 1e-9);  // The bound is valid...
      EXPECT_LE(balanced, oracle + 1e-9);   // ... and never above the oracle.
      EXPECT_LE(srs->lar, perfect + 0.01);
      EXPECT_LE(srs->lar, oracle + 1e-12);
      EXPECT_LE(srs->token_load_imbalance, 1 + slack);
      if (name == "semantic") {
        // Not yet better than coact at G = 8 (docs/PLANNER.md): hold it to within 2% of the
        // best baseline, and clearly above the placements that ignore co-activation.
        EXPECT_GT(srs->lar, 0.98 * best_baseline);
        EXPECT_GT(srs->lar, 1.15 * vanilla_srs);
      } else {
        best_baseline = std::max(best_baseline, std::max(blind, srs->lar));
        if (name == "vanilla") vanilla_srs = srs->lar;
      }
    }
  }
}

}  // namespace
}  // namespace semmoe::planner
