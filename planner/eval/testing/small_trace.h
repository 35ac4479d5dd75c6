// A trace small enough to work schedules out by hand, shared by planner eval's tests and the
// scale model's (which replays by the same rule).
#ifndef SEMMOE_PLANNER_EVAL_TESTING_SMALL_TRACE_H_
#define SEMMOE_PLANNER_EVAL_TESTING_SMALL_TRACE_H_

#include "gtest/gtest.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner::testing {

// 1 MoE layer, 4 experts, top-2; request 0: tokens {0,1}, {0,2}; request 1: {2,3}, {1,3}.
inline trace::TraceSet SmallTrace() {
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 2;
  t.header.moe_layers = {0};
  EXPECT_TRUE(t.AddRequest("r0", {7, 8}, {0, 1, 0, 2}).ok());
  EXPECT_TRUE(t.AddRequest("r1", {9, 7}, {2, 3, 1, 3}).ok());
  return t;
}

}  // namespace semmoe::planner::testing

#endif  // SEMMOE_PLANNER_EVAL_TESTING_SMALL_TRACE_H_
