// The per-call policy of RouterService.Generate, free of RPC types so it is tested on its own
// (call_policy_test.cc): admission, what to do when an engine attempt ends (complete, retry on
// another rank, fail), and the final record the client gets. routed_call.cc applies it; the
// grpc::Status a client sees is converted from these absl::Status values once, where the call
// finishes (ToGrpcStatus), and an engine call's grpc::Status once, where it ends (FromGrpcStatus).
#ifndef SEMMOE_ROUTER_CORE_CALL_POLICY_H_
#define SEMMOE_ROUTER_CORE_CALL_POLICY_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/proto/engine.pb.h"
#include "router/proto/router.pb.h"

namespace semmoe::router {

// OK while `in_flight` (the calls admitted, this one included) is within `max_in_flight`;
// RESOURCE_EXHAUSTED ("retry later") beyond.
absl::Status Admit(int64_t in_flight, int max_in_flight);

// Admission by predicted cost: RESOURCE_EXHAUSTED, naming the prediction, when the wait a new
// request faces before its first token (`predicted_wait`: the `queued_tokens` of prompt ahead of
// it, its own included, over the group's first-token rate in `tokens_per_s`; engine_group.h)
// exceeds what it can bear — `deadline_left` (its deadline, if it has one) or `max_wait` (the
// TTFT SLO times the router's slack; zero: no such bound). OK otherwise.
absl::Status AdmitByWait(absl::Duration predicted_wait, int64_t queued_tokens, double tokens_per_s,
                         std::optional<absl::Duration> deadline_left, absl::Duration max_wait);

// UNAVAILABLE when the rebatcher found no rank for the call (`last_error`: why the previous
// attempt's rank was left; "" on a first attempt).
absl::Status NoRankStatus(const std::string& last_error);

// How one attempt on an engine rank ended.
struct AttemptEnd {
  int rank = -1;
  absl::Status status;          // The engine call's end.
  bool final_received = false;  // The engine sent its final record.
  int64_t tokens_received = 0;  // Tokens forwarded to the client so far.
  bool cancelled = false;       // The client went away or its deadline passed.
  int excluded = 0;             // Ranks already excluded before this attempt.
  int group_size = 0;           // Ranks in the engine group.
};

struct AttemptDecision {
  enum class Kind { kComplete, kRetry, kFail };
  Kind kind = Kind::kFail;
  absl::Status status;         // kFail: what the client gets.
  std::string note;            // kRetry: why the rank was left, for a later NoRankStatus.
  bool mark_unusable = false;  // kRetry: the rank looked dead (until the poller hears from it).
};

// Complete when the engine ended well with its final record. Retry on another rank when the rank
// failed (UNAVAILABLE or RESOURCE_EXHAUSTED) before any token reached the client and another
// rank is left. Otherwise fail: a stream that ended early or broke after tokens is UNAVAILABLE;
// anything else keeps the engine's status.
AttemptDecision DecideAttempt(const AttemptEnd& end);

// What a finished call's timing was.
struct CallTimes {
  absl::Time start;   // Arrival.
  absl::Time placed;  // First placed on a rank.
  std::optional<absl::Time> first_token;
  absl::Time last_token;
  absl::Time now;  // The end.
};

// The client's final record: the engine's, plus where and how the router served it.
rpc::FinalRecord MakeFinalRecord(const engine::rpc::FinalRecord& engine, const CallTimes& times,
                                 int rank, const std::string& arm, int retries, int64_t version,
                                 double rank_lar);

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_CORE_CALL_POLICY_H_
