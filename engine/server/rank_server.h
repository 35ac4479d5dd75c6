// RankServer: everything `engine serve` runs — join the EP group through the rendezvous, load this
// rank's share of the model under the placement, start the GroupEngine loop and serve
// EngineService (+ gRPC health and reflection) — until asked to stop, re-forming the group when
// a rank fails.
#ifndef SEMMOE_ENGINE_SERVER_RANK_SERVER_H_
#define SEMMOE_ENGINE_SERVER_RANK_SERVER_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "engine/parallel/group_engine.h"
#include "engine/parallel/rank_model.h"

namespace semmoe::engine {

struct RankServerOptions {
  std::string model_dir;
  int rank = 0;
  int ranks = 1;
  // Which ranks share a node (planner/placement/topology.h; null: one node of `ranks`). With
  // several nodes of several ranks the dispatch crosses to each remote node once per token; a
  // placement built for another topology is refused (at start and at a rollout).
  std::shared_ptr<const planner::Topology> topology;
  std::string rendezvous;  // "file:DIR" or "grpc:HOST:PORT" (rendezvous.h).
  AttentionMode attention = AttentionMode::kDp;
  std::string placement = "vanilla";  // "vanilla", a placement JSON file, or with `planner` a
                                      // version number.
  // HOST:PORT of the planner: the placement (and with Attention-TP its tables) is the version
  // `placement` names, fetched from there; `affinity` and `layer_tables` are then unused.
  std::string planner;
  // With `planner`: rank 0 watches the planner's active version of this model (the planner's
  // model name) and the group rolls out each new one while it serves
  // (engine/parallel/placement_rollout.h). "": the placement stays.
  std::string follow_model;
  // Caps how fast a rollout loads experts (MB/s of weights); 0: no cap.
  double rollout_mb_per_s = 100;
  // > 0: this share of requests' routing goes to a live trace at `routing_trace`
  // (engine/parallel/routing_sampler.h; Attention-DP on the CPU forward), at most
  // `routing_sample_tokens` tokens kept.
  double sample_routing = 0;
  std::string routing_trace;
  int64_t routing_sample_tokens = 1 << 18;
  // Token affinities (TokenAffinity::Serialize bytes, e.g. from `planner export`): with
  // Attention-TP they enable the shuffled reduce-scatter / all-gather. Empty: plain order.
  std::string affinity;
  // The A tables (TransitionTable::Serialize bytes) for the placement: with `affinity`, tokens'
  // devices are also predicted from the devices their experts used at the previous two layers.
  std::string layer_tables;
  // False: predict from the T tables alone even when the placement has A tables (planner
  // versions bring both), to measure what the A tables add.
  bool use_layer_tables = true;
  // Shuffled Attention-TP: a rank's chunk of a batch may reach (1 + eps) × the mean.
  double token_balance_eps = 0.05;
  std::string host = "127.0.0.1";  // EngineService and the Gloo mesh listen here.
  int port = 0;                    // 0: any free port (written to port_file).
  std::string port_file;           // If set, the bound port is written here once serving.
  // Prometheus GET /metrics (engine_metrics.h) on `host`: −1 off, 0 any free port (written to
  // metrics_port_file if set).
  int metrics_port = -1;
  std::string metrics_port_file;
  // Bounds the rendezvous and every collective (`engine serve --collective_timeout_s`).
  absl::Duration connect_timeout = absl::Seconds(60);
  // A collective waiting longer than this for the other ranks marks this rank unavailable in its
  // stats and ends its calls with UNAVAILABLE (`engine serve --stall_s`).
  absl::Duration stall_after = absl::Seconds(3);
  GroupEngineOptions engine;
  // ≥ 0: the forward passes run on this CUDA device (engine/gpu), the experts' exchange over
  // NCCL when ranks > 1; under Attention-TP the GPU forward runs the shuffled collectives too.
  int cuda_device = -1;
  bool cuda_bf16 = true;  // The GPU's weights in bf16 (else f32: `engine --precision`).
  bool cuda_fp8 = false;  // With bf16: an FP8 checkpoint's FP8 layers kept FP8 (DeviceTarget).
  // Called once serving, with the bound port and what the rank serves with (the placement and
  // its tables: a file or a version from the planner), for the operator.
  std::function<void(int port, const std::string& serving_with)> on_serving;
};

// Blocks until `stop` is notified (then stops the whole group cleanly). When the group fails (a
// peer died or timed out) the rank stays up: its calls end with UNAVAILABLE, its stats say it is
// re-forming, and it meets the other ranks — survivors and the restarted one — in the next epoch
// (group_epoch.h), then serves again; a GPU rank instead returns the error (UNAVAILABLE). Errors
// before serving name what is wrong.
absl::Status RunRankServer(const RankServerOptions& options, absl::Notification& stop);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_SERVER_RANK_SERVER_H_
