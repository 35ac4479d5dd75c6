#include "engine/server/rank_server.h"

#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status_macros.h"
#include "engine/model/config.h"
#include "engine/parallel/device_predictor.h"
#include "engine/parallel/rendezvous.h"
#include "engine/server/device_backend.h"
#include "engine/server/engine_service.h"
#include "glog/logging.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/transition_table.h"
#include "planner/placement/placement.h"

namespace semmoe::engine {
namespace {

absl::StatusOr<planner::Placement> LoadPlacement(const RankServerOptions& o,
                                                 const model::ModelConfig& config) {
  if (o.placement == "vanilla") {
    return planner::Placement::Vanilla(config.MoeLayers(), config.num_experts, o.ranks);
  }
  ASSIGN_OR_RETURN(std::string text, ReadFile(o.placement));
  absl::StatusOr<planner::Placement> p = planner::Placement::FromJson(text);
  if (!p.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(o.placement, ": ", p.status().message()));
  }
  if (p->num_devices() != o.ranks) {
    return absl::InvalidArgumentError(absl::StrCat(o.placement, " places experts on ",
                                                   p->num_devices(), " devices but the group has ",
                                                   o.ranks, " ranks"));
  }
  return p;
}

}  // namespace

absl::Status RunRankServer(const RankServerOptions& o, absl::Notification& stop) {
  if (o.ranks < 1 || o.rank < 0 || o.rank >= o.ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", o.rank, " is not in a group of ", o.ranks));
  }
  DeviceBackend* cuda = nullptr;  // Asked before joining: a build without it fails at once.
  if (o.cuda_device >= 0) {
    if (o.attention != AttentionMode::kDp) {
      return absl::UnimplementedError(
          "serving from GPUs runs Attention-DP groups so far (--attn dp); the GPU forward has no "
          "Attention-TP stage yet");
    }
    ASSIGN_OR_RETURN(cuda, GetDeviceBackend("cuda"));
  }
  ASSIGN_OR_RETURN(model::ModelConfig config, model::LoadModelConfig(o.model_dir));
  ASSIGN_OR_RETURN(planner::Placement placement, LoadPlacement(o, config));
  std::unique_ptr<planner::TokenAffinity> affinity;
  std::unique_ptr<DevicePredictor> predictor;
  if (!o.affinity.empty() && o.attention == AttentionMode::kTp) {
    ASSIGN_OR_RETURN(std::string bytes, ReadFile(o.affinity));
    absl::StatusOr<planner::TokenAffinity> a = planner::TokenAffinity::Deserialize(bytes);
    if (!a.ok())
      return absl::InvalidArgumentError(absl::StrCat(o.affinity, ": ", a.status().message()));
    if (a->num_layers() != placement.num_layers() || a->num_experts() != placement.num_experts()) {
      return absl::InvalidArgumentError(absl::StrCat(o.affinity, ": tables for ", a->num_layers(),
                                                     " layers × ", a->num_experts(),
                                                     " experts do not match the placement"));
    }
    affinity = std::make_unique<planner::TokenAffinity>(std::move(*a));
    planner::TransitionTable transitions;
    if (!o.layer_tables.empty()) {
      ASSIGN_OR_RETURN(std::string table_bytes, ReadFile(o.layer_tables));
      absl::StatusOr<planner::TransitionTable> t =
          planner::TransitionTable::Deserialize(table_bytes);
      if (!t.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(o.layer_tables, ": ", t.status().message()));
      }
      if (static_cast<int>(t->layers.size()) != placement.num_layers() ||
          t->num_devices != placement.num_devices()) {
        return absl::InvalidArgumentError(
            absl::StrCat(o.layer_tables, ": tables for ", t->layers.size(), " layers × ",
                         t->num_devices, " devices do not match the placement"));
      }
      transitions = std::move(*t);
    }
    predictor = std::make_unique<DevicePredictor>(*affinity, placement, std::move(transitions));
  }

  LOG(INFO) << "rank " << o.rank << "/" << o.ranks << ": joining the group via " << o.rendezvous;
  ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm, ConnectGloo({.address = o.rendezvous,
                                                                    .rank = o.rank,
                                                                    .size = o.ranks,
                                                                    .hostname = o.host,
                                                                    .timeout = o.connect_timeout}));
  ASSIGN_OR_RETURN(std::unique_ptr<RankModel> model,
                   RankModel::Create(o.model_dir, placement, *comm,
                                     {.attention = o.attention,
                                      .predictor = predictor.get(),
                                      .token_balance_eps = o.token_balance_eps}));
  GroupEngineOptions engine_options = o.engine;
  engine_options.batch.tokenizer = model->tokenizer();
  if (engine_options.batch.eos_ids.empty()) engine_options.batch.eos_ids = config.eos_token_ids;
  std::unique_ptr<DeviceSession> device;  // Outlives the engine (declared first).
  if (cuda != nullptr) {
    ASSIGN_OR_RETURN(device, cuda->UseForServing(config, model->weights(), placement,
                                                 {.address = o.rendezvous,
                                                  .rank = o.rank,
                                                  .size = o.ranks,
                                                  .hostname = o.host,
                                                  .timeout = o.connect_timeout},
                                                 o.cuda_device, engine_options));
    LOG(INFO) << "rank " << o.rank << ": forward on " << device->Describe();
  }
  ASSIGN_OR_RETURN(std::unique_ptr<GroupEngine> engine,
                   GroupEngine::Create(*model, engine_options));

  EngineServiceImpl service(*engine, {.tokenizer = model->tokenizer(),
                                      .vocab_size = config.vocab_size,
                                      .max_prompt_tokens = config.max_position_embeddings,
                                      .moe_layers = config.MoeLayers()});
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::StrCat(o.host, ":", o.port), grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", o.host, ":", o.port));
  }
  engine->Start();
  if (!o.port_file.empty())
    RETURN_IF_ERROR(WriteFileAtomically(o.port_file, absl::StrCat(port, "\n")));
  LOG(INFO) << "rank " << o.rank << "/" << o.ranks << " (" << AttentionModeName(o.attention)
            << ") serving EngineService on " << o.host << ":" << port;
  if (o.on_serving) o.on_serving(port);

  // Wait for a stop request or the end of the group's loop (a peer failed or stopped it).
  absl::Notification ended;
  absl::Status loop_status;
  std::thread waiter([&] {
    loop_status = engine->Wait();
    ended.Notify();
  });
  while (!stop.HasBeenNotified() && !ended.HasBeenNotified()) {
    stop.WaitForNotificationWithTimeout(absl::Milliseconds(100));
  }
  if (!ended.HasBeenNotified()) {
    LOG(INFO) << "rank " << o.rank << ": stopping the group";
    engine->RequestStop();
  }
  waiter.join();
  server->GetHealthCheckService()->SetServingStatus(false);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (!loop_status.ok()) {
    LOG(ERROR) << "rank " << o.rank << ": the group failed: " << loop_status;
    return absl::UnavailableError(absl::StrCat("rank ", o.rank,
                                               ": the expert-parallel group "
                                               "failed: ",
                                               loop_status.message()));
  }
  return absl::OkStatus();
}

}  // namespace semmoe::engine
