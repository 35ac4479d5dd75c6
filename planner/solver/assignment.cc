#include "planner/solver/assignment.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace semmoe::planner {

std::vector<int> MaxWeightAssignment(const std::vector<double>& weight, int n) {
  // Minimise cost = -weight with the classic potentials formulation (1-indexed internally).
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> u(n + 1, 0), v(n + 1, 0), min_to(n + 1);
  std::vector<int> match(n + 1, 0), way(n + 1, 0);  // match[column] = row.
  std::vector<char> used(n + 1);
  for (int row = 1; row <= n; ++row) {
    match[0] = row;
    int col0 = 0;
    std::fill(min_to.begin(), min_to.end(), inf);
    std::fill(used.begin(), used.end(), 0);
    do {
      used[col0] = 1;
      const int r = match[col0];
      double delta = inf;
      int col1 = 0;
      for (int c = 1; c <= n; ++c) {
        if (used[c]) continue;
        const double cost = -weight[static_cast<size_t>(r - 1) * n + (c - 1)] - u[r] - v[c];
        if (cost < min_to[c]) min_to[c] = cost, way[c] = col0;
        if (min_to[c] < delta) delta = min_to[c], col1 = c;
      }
      for (int c = 0; c <= n; ++c) {
        if (used[c]) {
          u[match[c]] += delta;
          v[c] -= delta;
        } else {
          min_to[c] -= delta;
        }
      }
      col0 = col1;
    } while (match[col0] != 0);
    do {
      const int col1 = way[col0];
      match[col0] = match[col1];
      col0 = col1;
    } while (col0 != 0);
  }
  std::vector<int> column(n);
  for (int c = 1; c <= n; ++c) column[match[c] - 1] = c - 1;
  return column;
}

}  // namespace semmoe::planner
