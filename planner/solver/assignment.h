// Exact maximum-weight assignment (Hungarian algorithm, O(n³)): the expert-placement step of
// the co-scheduling solver, where rows are experts and columns are device slots.
#ifndef SEMMOE_PLANNER_SOLVER_ASSIGNMENT_H_
#define SEMMOE_PLANNER_SOLVER_ASSIGNMENT_H_

#include <vector>

namespace semmoe::planner {

// weight: n × n (row-major). Returns column[r] for each row r, a permutation maximising
// Σ weight[r][column[r]].
std::vector<int> MaxWeightAssignment(const std::vector<double>& weight, int n);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SOLVER_ASSIGNMENT_H_
