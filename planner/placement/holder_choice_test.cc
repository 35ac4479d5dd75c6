#include "planner/placement/holder_choice.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "planner/placement/placement.h"

namespace semmoe::planner {
namespace {

// 4 devices × 2 experts (expert e on device e / 2); device 3 also holds expert 0, device 2
// expert 1: experts 0 and 1 have two holders each.
Placement TwoHolders() {
  auto p = Placement::Vanilla({0}, 8, 4);
  EXPECT_TRUE(p.ok());
  auto r = p->WithReplicas({{{4}, {6}, {1}, {0}}});
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

std::vector<int32_t> Demand(const std::vector<std::vector<int32_t>>& rows) {
  std::vector<int32_t> d;
  for (const auto& row : rows) d.insert(d.end(), row.begin(), row.end());
  return d;
}

TEST(HolderChoiceTest, SpreadsAHotExpertOverItsHoldersAndKeepsLocalityFirst) {
  const Placement p = TwoHolders();
  ASSERT_EQ(p.HoldersOf(0, 0), (std::vector<int32_t>{0, 3}));
  // Device 1 wants expert 0 (held by 0 and 3) 10 times; device 0 serves 2 of its own.
  const std::vector<int32_t> demand = Demand({{2, 0, 0, 0, 0, 0, 0, 0},
                                              {10, 0, 0, 0, 0, 0, 0, 0},
                                              {0, 0, 0, 0, 0, 0, 0, 0},
                                              {0, 0, 0, 0, 0, 0, 0, 0}});
  const HolderChoice c = ChooseHolders(p, 0, demand);
  // Water-filled: device 0 starts at 2, device 3 at 0 → 4 to device 0, 6 to device 3.
  EXPECT_EQ(std::vector<int32_t>(c.Shares(1, 0).begin(), c.Shares(1, 0).end()),
            (std::vector<int32_t>{4, 6}));
  EXPECT_EQ(c.load(), (std::vector<int64_t>{6, 0, 0, 6}));
  // Device 0 holds expert 0: all its own activations stay home.
  EXPECT_EQ(std::vector<int32_t>(c.Shares(0, 0).begin(), c.Shares(0, 0).end()),
            (std::vector<int32_t>{2, 0}));
}

TEST(HolderChoiceTest, OneHolderTakesEverythingAndSharesAddUp) {
  const Placement p = TwoHolders();
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> count(0, 20);
  std::vector<int32_t> demand(4 * 8);
  for (int32_t& d : demand) d = count(rng);
  const HolderChoice c = ChooseHolders(p, 0, demand);
  int64_t total = 0;
  for (int r = 0; r < 4; ++r) {
    for (int e = 0; e < 8; ++e) {
      const auto shares = c.Shares(r, e);
      ASSERT_EQ(shares.size(), p.HoldersOf(0, e).size());
      EXPECT_EQ(std::accumulate(shares.begin(), shares.end(), 0), demand[r * 8 + e]);
      for (size_t h = 0; h < shares.size(); ++h) {
        const int device = p.HoldersOf(0, e)[h];
        if (p.Holds(0, r, e) && device != r) {
          EXPECT_EQ(shares[h], 0) << r << " " << e;
        }
      }
      total += demand[r * 8 + e];
    }
  }
  EXPECT_EQ(std::accumulate(c.load().begin(), c.load().end(), int64_t{0}), total);
}

TEST(HolderChoiceTest, BalancesBetterThanAlwaysTheHomeAndIsDeterministic) {
  // 8 devices × 4 experts, one replica each of the hottest experts' neighbours; skewed demand.
  auto vanilla = Placement::Vanilla({0}, 32, 8);
  ASSERT_TRUE(vanilla.ok());
  std::vector<std::vector<int32_t>> replicas(8);
  for (int d = 0; d < 8; ++d) replicas[d] = {(d * 4 + 4 + (d % 4)) % 32};
  auto p = vanilla->WithReplicas({replicas});
  ASSERT_TRUE(p.ok()) << p.status();
  std::mt19937 rng(9);
  std::vector<int32_t> demand(8 * 32);
  for (int r = 0; r < 8; ++r) {
    for (int e = 0; e < 32; ++e) demand[r * 32 + e] = (e < 8 ? 30 : 3) + rng() % 5;
  }
  const HolderChoice c = ChooseHolders(*p, 0, demand);
  std::vector<int64_t> home(8, 0);
  for (int r = 0; r < 8; ++r) {
    for (int e = 0; e < 32; ++e) home[p->Serving(0, e, r)] += demand[r * 32 + e];
  }
  EXPECT_LT(LoadImbalance(c.load()), LoadImbalance(home));
  const HolderChoice again = ChooseHolders(*p, 0, demand);
  EXPECT_EQ(again.load(), c.load());
  for (int r = 0; r < 8; ++r) {
    for (int e = 0; e < 32; ++e) {
      EXPECT_EQ(std::vector<int32_t>(again.Shares(r, e).begin(), again.Shares(r, e).end()),
                std::vector<int32_t>(c.Shares(r, e).begin(), c.Shares(r, e).end()));
    }
  }
}

// The rule as the header states it, one activation at a time.
std::vector<int32_t> UnitByUnit(const Placement& p, const std::vector<int32_t>& demand) {
  const int g = p.num_devices(), n = p.num_experts();
  std::vector<int32_t> shares;  // [rank][expert][holder], flattened.
  std::vector<size_t> at(static_cast<size_t>(g) * n);
  for (int r = 0; r < g; ++r) {
    for (int e = 0; e < n; ++e) {
      at[r * n + e] = shares.size();
      shares.resize(shares.size() + p.HoldersOf(0, e).size(), 0);
    }
  }
  std::vector<int64_t> load(g, 0);
  std::vector<std::tuple<int32_t, int, int>> pieces;  // (−count, rank, expert)
  for (int r = 0; r < g; ++r) {
    for (int e = 0; e < n; ++e) {
      const int32_t d = demand[r * n + e];
      const auto& holders = p.HoldersOf(0, e);
      if (d == 0) continue;
      if (!p.Holds(0, r, e) && holders.size() > 1) {
        pieces.emplace_back(-d, r, e);
        continue;
      }
      const int device = p.Holds(0, r, e) ? r : holders[0];
      const size_t h = std::find(holders.begin(), holders.end(), device) - holders.begin();
      shares[at[r * n + e] + h] = d;
      load[device] += d;
    }
  }
  std::sort(pieces.begin(), pieces.end());
  for (const auto& [minus, r, e] : pieces) {
    const auto& holders = p.HoldersOf(0, e);
    for (int32_t unit = 0; unit < -minus; ++unit) {
      size_t best = 0;
      for (size_t h = 1; h < holders.size(); ++h) {
        if (load[holders[h]] < load[holders[best]]) best = h;
      }
      ++shares[at[r * n + e] + best];
      ++load[holders[best]];
    }
  }
  return shares;
}

TEST(HolderChoiceTest, WaterFillingIsTheUnitByUnitRule) {
  // 4 devices × 4 experts, 3 replicas each (up to 4 holders an expert), random skewed demand.
  std::mt19937 rng(17);
  for (int trial = 0; trial < 50; ++trial) {
    auto vanilla = Placement::Random({0}, 16, 4, trial);
    ASSERT_TRUE(vanilla.ok());
    std::vector<std::vector<int32_t>> replicas(4);
    for (int d = 0; d < 4; ++d) {
      std::vector<int32_t> others;
      for (int e = 0; e < 16; ++e) {
        if (vanilla->Device(0, e) != d) others.push_back(e);
      }
      std::shuffle(others.begin(), others.end(), rng);
      replicas[d].assign(others.begin(), others.begin() + 3);
      std::sort(replicas[d].begin(), replicas[d].end());
    }
    auto p = vanilla->WithReplicas({replicas});
    ASSERT_TRUE(p.ok()) << p.status();
    std::vector<int32_t> demand(4 * 16);
    for (int32_t& d : demand) d = static_cast<int32_t>(rng() % 7 == 0 ? rng() % 200 : rng() % 9);
    const HolderChoice c = ChooseHolders(*p, 0, demand);
    const std::vector<int32_t> want = UnitByUnit(*p, demand);
    std::vector<int32_t> got;
    for (int r = 0; r < 4; ++r) {
      for (int e = 0; e < 16; ++e)
        got.insert(got.end(), c.Shares(r, e).begin(), c.Shares(r, e).end());
    }
    ASSERT_EQ(got, want) << "trial " << trial;
  }
}

TEST(HolderChoiceTest, DemandAndImbalance) {
  EXPECT_EQ(ExpertDemand({3, 1, 3, 0}, 4), (std::vector<int32_t>{1, 1, 0, 2}));
  EXPECT_DOUBLE_EQ(LoadImbalance(std::vector<int64_t>{2, 2, 2, 6}), 1.0);
  EXPECT_DOUBLE_EQ(LoadImbalance(std::vector<int64_t>{0, 0}), 0.0);
  EXPECT_DOUBLE_EQ(LoadImbalance({}), 0.0);
}

}  // namespace
}  // namespace semmoe::planner
