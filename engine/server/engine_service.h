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
#include <vector>

#include "engine/model/tokenizer.h"
#include "engine/parallel/group_engine.h"
#include "engine/proto/engine.grpc.pb.h"

namespace semmoe::engine {

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
  };
  // `engine` is borrowed and outlives the service.
  EngineServiceImpl(GroupEngine& engine, const Options& options)
      : engine_(engine), options_(options) {}

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

 private:
  GroupEngine& engine_;
  const Options options_;
  std::atomic<int64_t> next_id_{0};
};

// Stats as the proto (also used by tests and tools).
void ToProto(const GroupEngineStats& stats, const std::vector<int>& moe_layers,
             rpc::EngineStats& out);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_SERVER_ENGINE_SERVICE_H_
