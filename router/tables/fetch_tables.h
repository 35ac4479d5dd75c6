// The router's tables from the planner: a version's prompt-score table for this router's ranks
// and vocabulary (PlannerService.GetPromptScores, streamed in chunks, so no table size depends
// on gRPC's message limits). Used for the planner's active version (planner_watch.h) and for
// each arm of an experiment.
#ifndef SEMMOE_ROUTER_TABLES_FETCH_TABLES_H_
#define SEMMOE_ROUTER_TABLES_FETCH_TABLES_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "planner/proto/planner.grpc.pb.h"
#include "router/tables/router_tables.h"

namespace semmoe::router {

// Errors, prefixed with "version V's tables: ": the planner's (NOT_FOUND: the version has no
// affinity tables; FAILED_PRECONDITION: it places experts on another number of devices;
// UNAVAILABLE / DEADLINE_EXCEEDED: the planner), DATA_LOSS for a stream that does not add up,
// INVALID_ARGUMENT for a malformed table.
absl::StatusOr<std::shared_ptr<const RouterTables>> FetchRouterTables(
    planner::rpc::PlannerService::StubInterface& stub, int64_t version, int ranks, uint32_t vocab,
    absl::Duration timeout = absl::Seconds(60));

// Whether fetching again may succeed (the planner or the stream failed), as opposed to an answer
// about the version itself (no tables, another device count, a bad table).
bool IsTransient(const absl::Status& status);

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_TABLES_FETCH_TABLES_H_
