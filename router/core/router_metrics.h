// The router's Prometheus metrics (GET /metrics on its HTTP port), from the stats it answers on
// GetStats and each engine group's telemetry: requests by outcome (rejections apart from
// failures), TTFT / TPOT / E2E / queue-time histograms and tokens in and out per A/B arm, the
// rebatching window's depth, each arm's share, goodput, LAR and all-to-all bytes per token, the
// placement version its tables and its engines are on (and whether its tables are usable), and per
// rank: usable, requests in flight, KV-cache room, LAR.
#ifndef SEMMOE_ROUTER_CORE_ROUTER_METRICS_H_
#define SEMMOE_ROUTER_CORE_ROUTER_METRICS_H_

#include <string>
#include <vector>

#include "router/core/engine_group.h"
#include "router/proto/router.pb.h"

namespace semmoe::router {

// `telemetry[i]` belongs to `stats.arms(i)`. Arms are labelled by name ("default" for the only
// group outside an experiment).
std::string RouterMetricsText(const rpc::RouterStats& stats,
                              const std::vector<EngineGroup::Telemetry>& telemetry);

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_CORE_ROUTER_METRICS_H_
