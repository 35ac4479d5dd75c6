#include "engine/server/rank_server.h"

#include <memory>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status_macros.h"
#include "engine/model/config.h"
#include "engine/parallel/device_predictor.h"
#include "engine/parallel/rendezvous.h"
#include "engine/server/device_backend.h"
#include "engine/server/engine_service.h"
#include "engine/server/planner_fetch.h"
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

// The placement's and tables' bytes, from files or from the planner, named for errors.
struct PlacementBytes {
  std::string placement;               // JSON; "" for vanilla.
  std::string affinity, layer_tables;  // "" when none (or not Attention-TP).
  std::string placement_name, affinity_name, layers_name;
};

absl::StatusOr<PlacementBytes> ReadPlacement(const RankServerOptions& o) {
  const bool tables = o.attention == AttentionMode::kTp;
  PlacementBytes b;
  if (!o.planner.empty()) {
    int64_t version = 0;
    if (!absl::SimpleAtoi(o.placement, &version) || version <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("with --planner, --placement names a placement version (a number); got '",
                       o.placement, "'"));
    }
    ASSIGN_OR_RETURN(FetchedVersion v, FetchPlacementVersion(o.planner, version, tables));
    const std::string name = absl::StrCat("version ", version, " (planner ", o.planner, ")");
    b.placement = std::move(v.placement_json);
    b.affinity = std::move(v.affinity);
    b.layer_tables = std::move(v.layer_tables);
    b.placement_name = absl::StrCat(name, "'s placement");
    b.affinity_name = absl::StrCat(name, "'s affinity tables");
    b.layers_name = absl::StrCat(name, "'s layer tables");
    return b;
  }
  if (o.placement != "vanilla") {
    ASSIGN_OR_RETURN(b.placement, ReadFile(o.placement));
    b.placement_name = o.placement;
  }
  if (tables && !o.affinity.empty()) {
    ASSIGN_OR_RETURN(b.affinity, ReadFile(o.affinity));
    b.affinity_name = o.affinity;
    if (!o.layer_tables.empty()) {
      ASSIGN_OR_RETURN(b.layer_tables, ReadFile(o.layer_tables));
      b.layers_name = o.layer_tables;
    }
  }
  return b;
}

absl::StatusOr<planner::Placement> LoadPlacement(const RankServerOptions& o,
                                                 const PlacementBytes& b,
                                                 const model::ModelConfig& config) {
  if (b.placement_name.empty()) {
    return planner::Placement::Vanilla(config.MoeLayers(), config.num_experts, o.ranks);
  }
  absl::StatusOr<planner::Placement> p = planner::Placement::FromJson(b.placement);
  if (!p.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(b.placement_name, ": ", p.status().message()));
  }
  if (p->num_devices() != o.ranks) {
    return absl::InvalidArgumentError(absl::StrCat(b.placement_name, " places experts on ",
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
  ASSIGN_OR_RETURN(const PlacementBytes bytes, ReadPlacement(o));
  ASSIGN_OR_RETURN(planner::Placement placement, LoadPlacement(o, bytes, config));
  // What this rank serves with, for the operator.
  std::string serving_with =
      bytes.placement_name.empty() ? "placement vanilla" : bytes.placement_name;
  std::unique_ptr<planner::TokenAffinity> affinity;
  std::unique_ptr<DevicePredictor> predictor;
  if (!bytes.affinity.empty()) {
    absl::StatusOr<planner::TokenAffinity> a = planner::TokenAffinity::Deserialize(bytes.affinity);
    if (!a.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(bytes.affinity_name, ": ", a.status().message()));
    }
    if (a->num_layers() != placement.num_layers() || a->num_experts() != placement.num_experts()) {
      return absl::InvalidArgumentError(
          absl::StrCat(bytes.affinity_name, ": tables for ", a->num_layers(), " layers × ",
                       a->num_experts(), " experts do not match the placement"));
    }
    affinity = std::make_unique<planner::TokenAffinity>(std::move(*a));
    planner::TransitionTable transitions;
    if (!bytes.layer_tables.empty() && o.use_layer_tables) {
      absl::StatusOr<planner::TransitionTable> t =
          planner::TransitionTable::Deserialize(bytes.layer_tables);
      if (!t.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(bytes.layers_name, ": ", t.status().message()));
      }
      if (static_cast<int>(t->layers.size()) != placement.num_layers() ||
          t->num_devices != placement.num_devices()) {
        return absl::InvalidArgumentError(
            absl::StrCat(bytes.layers_name, ": tables for ", t->layers.size(), " layers × ",
                         t->num_devices, " devices do not match the placement"));
      }
      transitions = std::move(*t);
    }
    absl::StrAppend(&serving_with, "; Attention-TP predicts tokens' devices with ",
                    bytes.affinity_name,
                    transitions.layers.empty() ? "" : absl::StrCat(" and ", bytes.layers_name),
                    !bytes.layer_tables.empty() && !o.use_layer_tables
                        ? " alone (--tp_layer_tables=false: its layer tables are unused)"
                        : "");
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
  if (o.on_serving) o.on_serving(port, serving_with);

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
