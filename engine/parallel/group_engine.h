// GroupEngine: one rank's serving loop in an expert-parallel group. The rank's model is a
// RankModel; every forward pass runs collectives, so all ranks must run the same number of
// passes. Each loop iteration the ranks agree (a small all-gather of {busy, stopping} per rank):
//   Attention-DP  every rank runs its own continuous batch (BatchEngine); when any rank has work
//                 every rank steps, an idle one with an empty batch (it still serves its experts);
//   Attention-TP  rank 0 (the leader) runs the batch; before each pass it broadcasts the batch —
//                 tokens, positions and KV page tables — and the followers run the same pass over
//                 their heads, their KV cache mirroring the leader's pages.
// With a PlacementRollout, the same agreement carries its words and the group switches placements
// in one round on every rank (placement_rollout.h). When no rank has work they sleep `idle_poll`
// and agree again. A rank asking to stop stops the group at the next agreement. A failed collective
// (a peer died or hung) ends the loop on every rank with that error; the in-flight requests fail
// with UNAVAILABLE naming it — no hang. A rank's server then re-forms the group (group_epoch.h).
//
// Thread-safety: Submit, Cancel, RequestStop and stats are thread-safe; the sinks are called on
// the loop's thread.
#ifndef SEMMOE_ENGINE_PARALLEL_GROUP_ENGINE_H_
#define SEMMOE_ENGINE_PARALLEL_GROUP_ENGINE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "engine/parallel/placement_rollout.h"
#include "engine/parallel/rank_forward.h"
#include "engine/parallel/rank_model.h"
#include "engine/parallel/routing_sampler.h"
#include "engine/runtime/batch_engine.h"
#include "engine/runtime/kv_cache.h"

namespace semmoe::engine {

// Receives one request's output, on the loop's thread, in order: OnToken per sampled token (with
// the text it completes, decoded once by the batch loop), then exactly one of OnDone / OnError.
// Must not block.
class RequestSink {
 public:
  virtual ~RequestSink() = default;
  virtual void OnToken(int32_t token, absl::string_view text) = 0;
  virtual void OnDone(const runtime::GenerationResult& result) = 0;
  virtual void OnError(const absl::Status& status) = 0;
};

struct GroupEngineStats;

struct GroupEngineOptions {
  // The rank's continuous batching (its `forward` and `forward_every_step` are set here).
  runtime::BatchEngine::Options batch;
  // Idle ranks agree again after idle_poll; after 50 idle rounds in a row after max_idle_poll
  // (a new request then waits at most that long for the group to wake up).
  absl::Duration idle_poll = absl::Milliseconds(1);
  absl::Duration max_idle_poll = absl::Milliseconds(10);
  int max_inbox = 1024;  // Submitted but not yet taken by the loop; beyond: ResourceExhausted.
  // Borrowed, outlives the engine: the rank's forward on a device (rank_forward.h), for the
  // leader's passes and, under Attention-TP, the followers' too. Null: the rank model's CPU
  // forward (RankModel::forward(), whose arena must have the batch's pages). Either way the keys
  // and values live with the forward and the host cache only hands out pages.
  RankForward* device = nullptr;
  // Borrowed, outlives the engine: moves the group to other placements while it serves
  // (placement_rollout.h); its words join every agreement round. Null: the placement is fixed.
  PlacementRollout* rollout = nullptr;
  // Borrowed, outlives the engine: Attention-DP passes collect their routing for it (a live
  // routing trace, routing_sampler.h). Null: none.
  RoutingSampler* routing_sampler = nullptr;
};

struct GroupEngineStats {
  int rank = 0, ranks = 1;
  std::string attention;  // "dp" or "tp".
  bool accepts_requests = false;
  runtime::BatchEngineStats batch;
  int64_t running = 0, waiting = 0;
  // KV cache room of this rank's batch, in token positions (−1: no batch on this rank).
  int64_t kv_free_tokens = -1, kv_total_tokens = 0;
  int64_t completed = 0, failed = 0, cancelled = 0;
  // Of the completed requests: output tokens, and submission to the last token, summed.
  int64_t output_tokens = 0;
  int64_t request_micros = 0;
  int64_t forward_passes = 0;
  int64_t agreement_rounds = 0;  // Step agreements (one all-gather each), idle ones included.
  double attention_seconds = 0;
  std::vector<double> attention_seconds_per_layer;  // Per model layer.
  std::vector<MoeLayerCounters> layers;             // Per MoE layer.
  TpStageCounters tp;
  CommCounters comm;
  RolloutStats rollout;  // The placement served and any rollout (live, not a snapshot).
  // How long the collective under way has waited for the other ranks (0: none under way). Seconds
  // here mean a peer is stalled, dead or far behind.
  double collective_wait_s = 0;
  bool samples_routing = false;
  RoutingSampleStats routing_samples;  // Live, when samples_routing.
  // The whole group's request and expert-activation counters: every rank's completed, failed,
  // local and remote activations (its MoE layers', summed), summed at the latest step agreement
  // (their words ride it). What the group serves, whichever ranks the router chose.
  struct GroupServing {
    int64_t completed = 0, failed = 0, local_activations = 0, remote_activations = 0;
    // Of the completed requests: their output tokens and their time from submission to the last
    // token, summed (the group's time per output token: what its goodput rests on).
    int64_t output_tokens = 0;
    double request_seconds = 0;
  } group_serving;
};

class GroupEngine {
 public:
  // `model` is borrowed and outlives the engine; the engine drives its communicator.
  static absl::StatusOr<std::unique_ptr<GroupEngine>> Create(RankModel& model,
                                                             const GroupEngineOptions& options);
  ~GroupEngine();  // Stops (this rank only: call RequestStop on all and Wait for a clean end).

  // Starts the loop thread.
  void Start();
  // Queues a request; its output goes to `sink`. FailedPrecondition on an Attention-TP
  // follower, Unavailable once the loop stops or ended; ResourceExhausted when the inbox is full.
  // Validation errors (bad prompt, duplicate id) reach the sink's OnError.
  absl::Status Submit(runtime::GenerationRequest request, std::shared_ptr<RequestSink> sink);
  // The request's sink gets OnError(CANCELLED) and its KV pages are freed (no-op if unknown).
  void Cancel(const std::string& id);
  void RequestStop();
  // Blocks until the loop ends: OK after an agreed stop, else the error that ended it.
  absl::Status Wait();

  bool accepts_requests() const { return batch_ != nullptr; }
  int rank() const { return model_.comm().rank(); }
  // stats().collective_wait_s without the copy of the rest (thread-safe).
  double collective_wait_s() const {
    return absl::ToDoubleSeconds(model_.comm().InCollectiveFor());
  }
  GroupEngineStats stats() const;

 private:
  GroupEngine(RankModel& model, const GroupEngineOptions& options);
  absl::Status Loop();
  void DrainInbox();
  absl::Status Deliver(const std::vector<runtime::GenerationResult>& finished,
                       const std::vector<runtime::TokenEvent>& events);
  // Attention-TP: the leader's pass (broadcast the batch, then run it) and a follower's.
  absl::StatusOr<model::ForwardOutput> Forward(absl::Span<const model::SequenceInput> batch);
  absl::Status FollowerPass();
  void AddAttentionTimes(const model::ForwardOutput& out);
  void FailAll(const absl::Status& status);
  void Snapshot();

  RankModel& model_;
  const GroupEngineOptions options_;
  RankForward* forward_ = nullptr;               // options_.device, else the model's CPU forward.
  std::unique_ptr<runtime::BatchEngine> batch_;  // DP ranks and the TP leader.
  std::unique_ptr<runtime::PagedKvCache> mirror_kv_;                      // TP followers.
  absl::flat_hash_map<std::string, std::shared_ptr<RequestSink>> sinks_;  // Loop thread only.
  absl::flat_hash_map<std::string, absl::Time> submitted_;  // Same keys; loop thread only.
  int64_t forward_passes_ = 0;
  int64_t rounds_ = 0;  // Step agreements so far.
  // Under Attention-DP: every rank's tokens in the step's pass, from the step agreement (empty:
  // not agreed; the pass gathers them where it needs them).
  std::vector<int64_t> pass_tokens_;
  double attention_seconds_ = 0;
  std::vector<double> attention_seconds_per_layer_;

  mutable absl::Mutex mu_;
  std::deque<std::pair<runtime::GenerationRequest, std::shared_ptr<RequestSink>>> inbox_
      ABSL_GUARDED_BY(mu_);
  std::vector<std::string> cancels_ ABSL_GUARDED_BY(mu_);
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  GroupEngineStats stats_ ABSL_GUARDED_BY(mu_);
  // This rank's activations over its MoE layers at the latest Snapshot (the agreement's words).
  int64_t own_local_activations_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t own_remote_activations_ ABSL_GUARDED_BY(mu_) = 0;

  std::thread thread_;
  absl::Status result_;
  absl::Notification done_;
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_GROUP_ENGINE_H_
