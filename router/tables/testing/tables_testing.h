// Test helpers for the router's table holders: a tiny version's affinity tables and a bounded
// wait for what threads (watches, fetches) do.
#ifndef SEMMOE_ROUTER_TABLES_TESTING_TABLES_TESTING_H_
#define SEMMOE_ROUTER_TABLES_TESTING_TABLES_TESTING_H_

#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/token_affinity_builder.h"

namespace semmoe::router::testing {

// TokenAffinity bytes for a model of 2 MoE layers × 4 experts (one request of two tokens).
inline std::string TinyAffinityTables() {
  planner::trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0, 1};
  EXPECT_TRUE(t.AddRequest("r", {5, 6}, {0, 1, 3, 2}).ok());
  return planner::BuildTokenAffinity(t).Serialize();
}

// Polls `done` until it holds or `limit` of real time passed (a bound on scheduling and RPCs,
// not a measure of anything under test).
template <typename F>
bool Eventually(F done, absl::Duration limit = absl::Seconds(10)) {
  const absl::Time until = absl::Now() + limit;
  while (absl::Now() < until) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return done();
}

}  // namespace semmoe::router::testing

#endif  // SEMMOE_ROUTER_TABLES_TESTING_TABLES_TESTING_H_
