// The router's core, free of RPC types: everything between a door (the gRPC service in
// router/server, the HTTP door in router/http) and the engine ranks, written once.
//
// Submit: the prompt is checked and tokenised (engine/text/prompt.h, as the engines check it),
// admitted (at most `max_in_flight` calls, and by predicted wait: call_policy.h), given its A/B
// arm (engine_group.h ChooseGroup), scored against its group's tables (router/tables) and placed
// by the group's rebatcher (router/rebatch) with the requests arriving in the same window. The
// engine call is asynchronous; tokens go to the call's sink as they arrive. The deadline is the
// engine call's; a cancelled handle cancels the engine call, which frees the engine slot. A rank
// that fails before the first token (UNAVAILABLE or RESOURCE_EXHAUSTED) is excluded and the
// request placed again; after the first token the call fails with UNAVAILABLE (routed_call.h).
//
// A poller asks every rank for its stats (GetStats) every `poll_interval`: a rank that does not
// answer is not used until it does again; its LAR is reported with each request it serves. With
// an experiment id and a planner address the core records every arm's metrics in the planner's
// experiment every `report_interval`.
//
// Thread-safe.
#ifndef SEMMOE_ROUTER_CORE_ROUTER_CORE_H_
#define SEMMOE_ROUTER_CORE_ROUTER_CORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/text/tokenizer.h"
#include "router/core/engine_group.h"
#include "router/core/router_api.h"
#include "router/proto/router.pb.h"

namespace semmoe::router {

struct RouterState;  // router_state.h

struct RouterOptions {
  std::vector<GroupOptions> groups;  // One per engine group; shares add up to 100.
  const engine::model::Tokenizer* tokenizer = nullptr;  // Borrowed; null: token ids only.
  int vocab_size = 0;
  int max_prompt_tokens = 0;  // The model's positions (0: no limit), as the engines check.
  int max_in_flight = 4096;
  // How long a request may wait in the window when it names no max_queue_ms.
  absl::Duration default_max_queue = absl::Milliseconds(20);
  absl::Duration poll_interval = absl::Milliseconds(500);
  // A request no rank can take (its group re-forming, a rank restarting) waits this long, within
  // its deadline, for one to come back before UNAVAILABLE. Zero: fails at once.
  absl::Duration requeue = absl::Seconds(10);
  // Admission by predicted wait (call_policy.h AdmitByWait): a request whose group's predicted
  // wait exceeds its deadline, or this bound, is refused at once (RESOURCE_EXHAUSTED). Zero: only
  // deadlines. Default 2 s: twice the default TTFT SLO.
  absl::Duration max_predicted_wait = absl::Seconds(2);
  int64_t experiment_id = 0;  // The A/B experiment the groups are the arms of (0: none).
  std::string planner;        // With an experiment: where to record the arms' metrics.
  absl::Duration report_interval = absl::Seconds(5);
  std::string cluster;  // --policy time: the profile its predictions use (for the stats).
};

class RouterCore : public RouterApi {
 public:
  // Starts the poller (and the reporter, with an experiment).
  explicit RouterCore(const RouterOptions& options);
  // Stop the doors first; waits (up to 30 s) for calls still finishing.
  ~RouterCore() override;

  absl::StatusOr<std::shared_ptr<CallHandle>> Submit(const rpc::GenerateRequest& request,
                                                     std::optional<absl::Time> deadline,
                                                     std::shared_ptr<CallSink> sink) override;
  rpc::RouterStats Stats() const override;
  // router_metrics.h's series.
  std::string MetricsText() const override;

 private:
  void Poll();
  void Report();

  std::shared_ptr<RouterState> shared_;
  std::thread poller_, reporter_;
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_CORE_ROUTER_CORE_H_
