#include "planner/solver/migration.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

constexpr int kExperts = 16, kDevices = 4, kTopK = 2;
const std::vector<int> kLayers = {1, 3, 5};

// Random routing: 40 requests of 12 tokens; each request leans on a few experts per layer, so
// placements differ in locality.
trace::TraceSet RandomTrace(uint32_t seed) {
  std::mt19937 rng(seed);
  trace::TraceSet t;
  t.header.num_experts = kExperts;
  t.header.top_k = kTopK;
  t.header.moe_layers = {kLayers.begin(), kLayers.end()};
  for (int r = 0; r < 40; ++r) {
    std::vector<uint32_t> tokens;
    std::vector<uint16_t> experts;
    const int lean = static_cast<int>(rng() % kExperts);
    for (int i = 0; i < 12; ++i) {
      tokens.push_back(rng() % 100);
      for (size_t l = 0; l < kLayers.size(); ++l) {
        const int a = rng() % 3 == 0 ? static_cast<int>(rng() % kExperts) : lean;
        experts.push_back(a);
        experts.push_back((a + 1 + rng() % (kExperts - 1)) % kExperts);
      }
    }
    EXPECT_TRUE(t.AddRequest("r" + std::to_string(r), tokens, experts).ok());
  }
  return t;
}

std::vector<std::vector<int>> RandomSchedule(const trace::TraceSet& t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int> per_token(t.num_tokens());
  for (int r = 0; r < t.num_requests(); ++r) {
    const int d = static_cast<int>(rng() % kDevices);
    for (int64_t i = t.request_begin[r]; i < t.request_begin[r + 1]; ++i) per_token[i] = d;
  }
  return std::vector<std::vector<int>>(t.num_layers(), per_token);
}

// Local activations of `p` when token t runs on relabel[schedule[l][t]], counted directly.
double Lar(const trace::TraceSet& t, const Placement& p,
           const std::vector<std::vector<int>>& schedule, const std::vector<int>& relabel) {
  int64_t local = 0, all = 0;
  for (int l = 0; l < t.num_layers(); ++l) {
    for (int64_t i = 0; i < t.num_tokens(); ++i) {
      for (int j = 0; j < t.top_k(); ++j) {
        local += p.Device(l, t.Experts(i, l)[j]) == relabel[schedule[l][i]];
        ++all;
      }
    }
  }
  return static_cast<double>(local) / all;
}

TEST(MigrationTest, TheSamePlacementWithPermutedLabelsMovesNothing) {
  const trace::TraceSet t = RandomTrace(1);
  const Placement served = *Placement::Random(kLayers, kExperts, kDevices, 7);
  const std::vector<int> perm = {2, 0, 3, 1};
  const Placement candidate = *RelabelDevices(served, perm);
  ASSERT_GT(MovedExperts(served, candidate), 0);
  auto m = MigrateFrom(served, candidate, t, RandomSchedule(t, 3), {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->moved_as_built, MovedExperts(served, candidate));
  EXPECT_EQ(m->moved_relabelled, 0);
  EXPECT_EQ(m->moved, 0);
  EXPECT_EQ(MovedExperts(served, m->placement), 0);
  for (int d = 0; d < kDevices; ++d) EXPECT_EQ(m->relabel[perm[d]], d);
}

TEST(MigrationTest, TheRelabellingKeepsTheMostExpertsInPlace) {
  const trace::TraceSet t = RandomTrace(2);
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const Placement served = *Placement::Random(kLayers, kExperts, kDevices, seed);
    const Placement candidate = *Placement::Random(kLayers, kExperts, kDevices, seed + 100);
    auto m = MigrateFrom(served, candidate, t, RandomSchedule(t, 4), {});
    ASSERT_TRUE(m.ok()) << m.status();
    std::vector<int> perm(kDevices);
    std::iota(perm.begin(), perm.end(), 0);
    int best = 1 << 30;
    do {
      best = std::min(best, MovedExperts(served, *RelabelDevices(candidate, perm)));
    } while (std::next_permutation(perm.begin(), perm.end()));
    EXPECT_EQ(m->moved_relabelled, best);
    // Without limits, the result is the relabelled candidate.
    EXPECT_EQ(m->moved, best);
    EXPECT_EQ(MovedExperts(*RelabelDevices(candidate, m->relabel), m->placement), 0);
    EXPECT_EQ(m->cycles_applied, m->cycles_total);
  }
}

TEST(MigrationTest, ABudgetMovesWholeCyclesAndKeepsDevicesBalanced) {
  const trace::TraceSet t = RandomTrace(3);
  const Placement served = *Placement::Random(kLayers, kExperts, kDevices, 11);
  const Placement candidate = *Placement::Random(kLayers, kExperts, kDevices, 12);
  const auto schedule = RandomSchedule(t, 5);
  auto full = MigrateFrom(served, candidate, t, schedule, {});
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_GT(full->moved_relabelled, 10);
  for (int budget : {0, 3, 10}) {
    auto m = MigrateFrom(served, candidate, t, schedule, {.max_moved = budget});
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_LE(m->moved, budget);
    EXPECT_EQ(MovedExperts(served, m->placement), m->moved);
    // Every device still holds N/G experts per layer (Placement checks it) and every moved expert
    // went where the candidate puts it.
    const Placement wanted = *RelabelDevices(candidate, m->relabel);
    for (int l = 0; l < served.num_layers(); ++l) {
      for (int d = 0; d < kDevices; ++d) EXPECT_EQ(m->placement.ExpertsOn(l, d).size(), 4u);
      for (int e = 0; e < kExperts; ++e) {
        if (m->placement.Device(l, e) != served.Device(l, e)) {
          EXPECT_EQ(m->placement.Device(l, e), wanted.Device(l, e));
        }
      }
    }
    // The reported rates are the directly counted ones; the moves applied only gain.
    EXPECT_NEAR(m->lar_result, Lar(t, m->placement, schedule, m->relabel), 1e-12);
    EXPECT_NEAR(m->lar_served, Lar(t, served, schedule, m->relabel), 1e-12);
    EXPECT_GE(m->lar_result, m->lar_served);
  }
  EXPECT_EQ(MigrateFrom(served, candidate, t, schedule, {.max_moved = 0})->moved, 0);
}

TEST(MigrationTest, ALarToleranceMovesFewerExpertsForAtMostThatLoss) {
  const trace::TraceSet t = RandomTrace(4);
  const Placement served = *Placement::Random(kLayers, kExperts, kDevices, 21);
  const Placement candidate = *Placement::Random(kLayers, kExperts, kDevices, 22);
  const auto schedule = RandomSchedule(t, 6);
  auto full = MigrateFrom(served, candidate, t, schedule, {});
  ASSERT_TRUE(full.ok());
  EXPECT_NEAR(full->lar_candidate, Lar(t, full->placement, schedule, full->relabel), 1e-12);
  auto m = MigrateFrom(served, candidate, t, schedule, {.max_lar_loss = 0.02});
  ASSERT_TRUE(m.ok());
  EXPECT_LE(m->lar_candidate - m->lar_result, 0.02 + 1e-12);
  EXPECT_LE(m->moved, full->moved);
  auto exact = MigrateFrom(served, candidate, t, schedule, {.max_lar_loss = 0});
  ASSERT_TRUE(exact.ok());
  EXPECT_GE(exact->lar_result, exact->lar_candidate - 1e-12);
}

TEST(MigrationTest, ReplicaSlotsKeepResidentWeightsUnlessTheBudgetPays) {
  const Placement homes = *Placement::Vanilla({0}, 8, 2);  // {0..3} | {4..7}
  const Placement served = *homes.WithReplicas({{{5}, {1}}});
  const Placement wanted = *homes.WithReplicas({{{6}, {2}}});
  int budget = 0, shipped = 0;
  auto kept = LimitReplicaChanges(served, wanted, &budget, &shipped);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->ReplicasOn(0, 0), (std::vector<int32_t>{5}));
  EXPECT_EQ(kept->ReplicasOn(0, 1), (std::vector<int32_t>{1}));
  EXPECT_EQ(shipped, 0);
  budget = 1;
  auto one = LimitReplicaChanges(served, wanted, &budget, &shipped);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(shipped, 1);
  EXPECT_EQ(budget, 0);
  EXPECT_EQ(one->ReplicasOn(0, 0), (std::vector<int32_t>{6}));
  EXPECT_EQ(one->ReplicasOn(0, 1), (std::vector<int32_t>{1}));
  budget = -1, shipped = 0;
  auto all = LimitReplicaChanges(served, wanted, &budget, &shipped);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->ReplicasOn(0, 1), (std::vector<int32_t>{2}));
  EXPECT_EQ(shipped, 2);
}

TEST(MigrationTest, MismatchedShapesAreRefused) {
  const trace::TraceSet t = RandomTrace(5);
  const Placement a = *Placement::Vanilla(kLayers, kExperts, kDevices);
  const Placement b = *Placement::Vanilla(kLayers, kExperts, 2);
  EXPECT_FALSE(MigrateFrom(a, b, t, RandomSchedule(t, 1), {}).ok());
  EXPECT_FALSE(MigrateFrom(a, a, t, {}, {}).ok());
  EXPECT_FALSE(RelabelDevices(a, {0, 0, 1, 2}).ok());
  EXPECT_FALSE(RelabelDevices(a, {0, 1}).ok());
}

}  // namespace
}  // namespace semmoe::planner
