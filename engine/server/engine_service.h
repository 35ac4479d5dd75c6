// EngineService (engine/proto/engine.proto): a thin asynchronous gRPC adapter over a rank's
// GroupEngine. Generate is a callback-API write reactor: the engine's loop thread hands tokens to
// the stream (coalescing those that arrive while a write is in flight) and never blocks on the
// network; a cancelled call or an expired deadline cancels the request in the engine.
//
// Thread-safe.
#ifndef SEMMOE_ENGINE_SERVER_ENGINE_SERVICE_H_
#define SEMMOE_ENGINE_SERVER_ENGINE_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/parallel/group_engine.h"
#include "engine/proto/engine.grpc.pb.h"
#include "engine/text/tokenizer.h"

namespace semmoe::engine {

// What a rank serves with: its group's engine while the group is formed; else none, and why
// (the group is re-forming after a rank failed). Thread-safe.
class EngineSlot {
 public:
  void Serve(std::shared_ptr<GroupEngine> engine, int64_t epoch);
  void Down(std::string reason);
  std::shared_ptr<GroupEngine> engine() const;
  std::string down_reason() const;
  int64_t epoch() const;

 private:
  mutable absl::Mutex mu_;
  std::shared_ptr<GroupEngine> engine_ ABSL_GUARDED_BY(mu_);
  std::string down_ ABSL_GUARDED_BY(mu_) = "the group has not formed yet";
  int64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
};

class GenerateStream;

class EngineServiceImpl final : public rpc::EngineService::CallbackService {
 public:
  struct Options {
    const model::Tokenizer* tokenizer = nullptr;  // For text prompts; null: token ids only.
    int vocab_size = 0;
    int max_prompt_tokens = 0;    // Longer prompts are INVALID_ARGUMENT; 0: no limit here.
    std::vector<int> moe_layers;  // Model layer index of each MoE layer (for GetStats).
    // Set on a rank that follows the planner's active version: why the watch is down ("": up).
    std::function<std::string()> watch_error;
    // Rank 0 of a group that can roll out: proposes a version (Rollout). Null: refused.
    std::function<void(int64_t version)> rollout;
    // Who answers while the slot is empty.
    int rank = 0, ranks = 1;
    std::string attention = "dp";
    // The group's topology (Topology::Describe; "": one node) and whether its dispatch
    // deduplicates per node.
    std::string topology;
    bool node_dedup = false;
    // A collective waiting longer than this marks the rank unavailable (a peer stalled or died)
    // and AbortIfStalled ends its calls, long before the collective's own timeout.
    absl::Duration stall_after = absl::Seconds(3);
  };
  // `engine` is borrowed and outlives the service.
  EngineServiceImpl(GroupEngine& engine, const Options& options);
  // Serves whatever `slot` (borrowed, outlives the service) holds.
  EngineServiceImpl(EngineSlot& slot, const Options& options) : slot_(slot), options_(options) {}

  grpc::ServerWriteReactor<rpc::GenerateResponse>* Generate(
      grpc::CallbackServerContext* context, const rpc::GenerateRequest* request) override;
  grpc::ServerUnaryReactor* Rollout(grpc::CallbackServerContext* context,
                                    const rpc::RolloutRequest* request,
                                    rpc::RolloutResponse* response) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const rpc::GetStatsRequest* request,
                                     rpc::EngineStats* response) override;

  // What GetStats answers (also /metrics).
  rpc::EngineStats Stats() const;

  // The request as the engine takes it; InvalidArgument naming the field at fault.
  absl::StatusOr<runtime::GenerationRequest> Convert(const rpc::GenerateRequest& request);

  // When the group's collective has waited past stall_after: ends every call in progress with
  // UNAVAILABLE (their requests are cancelled in the engine). Returns how many it ended. Called
  // periodically by the rank's server.
  int AbortIfStalled();
  // Ends every call still in progress with `status` (when the group's loop has ended, before the
  // server shuts down). Returns how many it ended.
  int AbortAll(const absl::Status& status);

 private:
  // Why `engine` (may be null) cannot take requests now ("": it can).
  std::string Unavailable(const GroupEngine* engine) const;
  void Forget(const GenerateStream* stream);

  EngineSlot own_slot_;  // With the GroupEngine& constructor.
  EngineSlot& slot_;
  const Options options_;
  std::atomic<int64_t> next_id_{0};
  absl::Mutex streams_mu_;
  absl::flat_hash_map<const GenerateStream*, std::weak_ptr<GenerateStream>> streams_
      ABSL_GUARDED_BY(streams_mu_);
};

// Stats as the proto (also used by tests and tools).
void ToProto(const GroupEngineStats& stats, const std::vector<int>& moe_layers,
             rpc::EngineStats& out);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_SERVER_ENGINE_SERVICE_H_
