// RouterService (router/proto/router.proto) over one group of Attention-DP engine ranks.
//
// Generate: the prompt is tokenised here (so it can be scored), its fit to each rank comes from
// the tables in use (router/tables), and the rebatcher (router/rebatch) places it with the
// requests arriving in the same window. The engine call is asynchronous (callback API both
// ways): tokens are forwarded as they arrive, coalesced while a write is in flight. The client's
// deadline is the engine call's deadline and a cancelled client cancels the engine call, which
// frees the engine slot. A rank that fails before the first token (UNAVAILABLE or
// RESOURCE_EXHAUSTED) is excluded and the request placed again; after the first token the
// stream fails with UNAVAILABLE. Admission: at most `max_in_flight` calls between arrival and
// end, beyond which RESOURCE_EXHAUSTED.
//
// A poller asks every rank for its stats (GetStats) every `poll_interval`: a rank that does not
// answer is not used until it does again; its LAR is reported with each request it serves.
//
// A/B: with several engine groups (arms), each request goes to one by a deterministic hash of its
// user key (else its request id) cut by the arms' shares (engine_group.h); each arm has its own
// ranks, tables, rebatcher and statistics, and with an experiment id and a planner address the
// router records every arm's metrics in the planner's experiment every `report_interval`.
//
// Thread-safe.
#ifndef SEMMOE_ROUTER_SERVER_ROUTER_SERVICE_H_
#define SEMMOE_ROUTER_SERVER_ROUTER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/model/tokenizer.h"
#include "engine/proto/engine.grpc.pb.h"
#include "router/proto/router.grpc.pb.h"
#include "router/server/engine_group.h"
#include "router/server/latency_window.h"

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
};

class RouterServiceImpl final : public rpc::RouterService::CallbackService {
 public:
  explicit RouterServiceImpl(const RouterOptions& options);
  // Shut the gRPC server down first; waits (up to 30 s) for calls still finishing.
  ~RouterServiceImpl() override;

  grpc::ServerWriteReactor<rpc::GenerateResponse>* Generate(
      grpc::CallbackServerContext* context, const rpc::GenerateRequest* request) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const rpc::GetStatsRequest* request,
                                     rpc::RouterStats* response) override;

  rpc::RouterStats Stats() const;
  // The Prometheus text for GET /metrics (router_metrics.h).
  std::string MetricsText() const;

 private:
  void Poll();
  void Report();

  std::shared_ptr<RouterState> shared_;
  std::thread poller_, reporter_;
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_SERVER_ROUTER_SERVICE_H_
