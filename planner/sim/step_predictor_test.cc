#include "planner/sim/step_predictor.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"
#include "planner/sim/testing/fixtures.h"

namespace semmoe::planner::sim {
namespace {

ModelShape Shape() {
  ModelShape s = *KnownShape("deepseek-v3");
  return s;
}

int ArgMin(const std::vector<double>& v) {
  return static_cast<int>(std::min_element(v.begin(), v.end()) - v.begin());
}

// A request whose activations fall on `ranks` evenly.
NewRequest On(int64_t tokens, int g, const std::vector<int>& ranks) {
  NewRequest r{.prompt_tokens = tokens, .share = std::vector<double>(g, 0)};
  for (int d : ranks) r.share[d] = 1.0 / ranks.size();
  return r;
}

TEST(StepPredictorTest, TimesForIsLayerTimeWithTheRequestOnEachRank) {
  const StepPredictor p(Shape(), *LoadClusterProfile("h200"), *Topology::Nodes(2, 4),
                        {.node_dedup = true});
  const std::vector<RankState> ranks = {{3, 900}, {0, 0},  {10, 5000}, {1, 100},
                                        {0, 0},   {7, 70}, {2, 20},    {0, 0}};
  std::vector<NewRequest> window = {On(500, 8, {4, 5}), On(1200, 8, {0, 1, 2, 3}),
                                    NewRequest{.prompt_tokens = 64}};
  std::vector<int> placed = {6, -1, 2};
  const std::vector<double> times = p.TimesFor(ranks, window, placed, 1);
  for (int r = 0; r < 8; ++r) {
    placed[1] = r;
    EXPECT_NEAR(times[r], p.LayerTime(ranks, window, placed), 1e-12) << r;
  }
}

TEST(StepPredictorTest, WhereLinksDecideTheRequestGoesWhereItsExpertsAre) {
  // 2 nodes of 4 over a slow link between them, every rank idle: a prompt whose experts sit on
  // node 1 costs least there (its rows stay inside the node).
  ClusterProfile profile = *LoadClusterProfile("h200");
  profile.inter_bw.value = 1e9;
  const StepPredictor p(Shape(), profile, *Topology::Nodes(2, 4), {.node_dedup = true});
  const std::vector<RankState> ranks(8);
  const std::vector<NewRequest> window = {On(2000, 8, {4, 5, 6, 7})};
  const std::vector<double> times = p.TimesFor(ranks, window, {-1}, 0);
  EXPECT_GE(ArgMin(times), 4);
  EXPECT_LT(times[4], 0.8 * times[0]);  // Most of the layer is the link.
}

TEST(StepPredictorTest, WhereComputeDecidesTheLeastLoadedRankWins) {
  // Links a thousand times faster than H200's: locality is worth nothing, and a rank with less
  // context to stream makes the shorter layer, wherever the prompt's experts are.
  ClusterProfile profile = *LoadClusterProfile("h200");
  profile.intra_bw.value *= 1000;
  profile.inter_bw.value *= 1000;
  const StepPredictor p(Shape(), profile, *Topology::Flat(4));
  std::vector<RankState> ranks(4, RankState{.sequences = 40, .context_tokens = 200000});
  ranks[3] = {.sequences = 10, .context_tokens = 20000};
  const std::vector<NewRequest> window = {On(300, 4, {0})};
  EXPECT_EQ(ArgMin(p.TimesFor(ranks, window, {-1}, 0)), 3);
}

TEST(StepPredictorTest, ABusyRankIsNotMadeTheStraggler) {
  // The prompt's experts are on rank 0, but rank 0 already streams far more KV than the others:
  // putting the prefill there makes it the straggler, more than the rows it would save.
  const StepPredictor p(Shape(), *LoadClusterProfile("h200"), *Topology::Flat(8));
  std::vector<RankState> ranks(8, RankState{.sequences = 8, .context_tokens = 8000});
  ranks[0] = {.sequences = 64, .context_tokens = 2000000};
  const std::vector<NewRequest> window = {On(1500, 8, {0})};
  EXPECT_NE(ArgMin(p.TimesFor(ranks, window, {-1}, 0)), 0);
}

TEST(StepPredictorTest, TokensBeyondTheStepBudgetWaitForLaterSteps) {
  const StepPredictor p(Shape(), *LoadClusterProfile("h100"), *Topology::Flat(2),
                        {.max_batch_tokens = 1000});
  const std::vector<RankState> ranks(2);
  EXPECT_DOUBLE_EQ(p.LayerTime(ranks, {NewRequest{.prompt_tokens = 1000}}, {0}),
                   p.LayerTime(ranks, {NewRequest{.prompt_tokens = 5000}}, {0}));
  EXPECT_LT(p.LayerTime(ranks, {NewRequest{.prompt_tokens = 10}}, {0}),
            p.LayerTime(ranks, {NewRequest{.prompt_tokens = 1000}}, {0}));
  // Nothing placed and nothing running: the fixed costs alone, the same for any window.
  EXPECT_DOUBLE_EQ(p.LayerTime(ranks, {NewRequest{.prompt_tokens = 10}}, {-1}),
                   p.LayerTime(ranks, {}, {}));
}

}  // namespace
}  // namespace semmoe::planner::sim
