// The planner's Prometheus metrics (GET /metrics on `planner serve --metrics_port`), read from
// its database at scrape time: per model the active version and the versions by status; per
// experiment its status, and per arm its version, share and the latest metrics the router
// recorded (goodput, throughput, LAR, all-to-all bytes per token, TTFT/TPOT/E2E p50 and p99),
// and whether the arm was routed as planned.
#ifndef SEMMOE_PLANNER_SERVER_PLANNER_METRICS_H_
#define SEMMOE_PLANNER_SERVER_PLANNER_METRICS_H_

#include <string>

#include "absl/status/statusor.h"
#include "planner/store/placement_store.h"

namespace semmoe::planner {

// The text exposition format; an unreadable database is an error (the scrape gets a 500).
absl::StatusOr<std::string> PlannerMetricsText(PlacementStore& store);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SERVER_PLANNER_METRICS_H_
