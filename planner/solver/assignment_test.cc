#include "planner/solver/assignment.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

// Against brute force over all permutations for n ≤ 7.
TEST(AssignmentTest, MatchesBruteForce) {
  std::mt19937 rng(1);
  for (int n = 1; n <= 7; ++n) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> w(n * n);
      for (double& x : w) x = static_cast<int>(rng() % 20) - 5;
      std::vector<int> perm(n);
      std::iota(perm.begin(), perm.end(), 0);
      double best = -1e18;
      do {
        double s = 0;
        for (int r = 0; r < n; ++r) s += w[r * n + perm[r]];
        best = std::max(best, s);
      } while (std::next_permutation(perm.begin(), perm.end()));
      std::vector<int> got = MaxWeightAssignment(w, n);
      std::vector<int> sorted = got;
      std::sort(sorted.begin(), sorted.end());
      for (int i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);  // A permutation.
      double s = 0;
      for (int r = 0; r < n; ++r) s += w[r * n + got[r]];
      EXPECT_DOUBLE_EQ(s, best) << "n " << n << " trial " << trial;
    }
  }
}

}  // namespace
}  // namespace semmoe::planner
