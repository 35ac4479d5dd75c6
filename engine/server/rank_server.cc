#include "engine/server/rank_server.h"

#include <memory>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/metrics_server.h"
#include "common/security.h"
#include "common/status_macros.h"
#include "engine/model/config.h"
#include "engine/parallel/placement_rollout.h"
#include "engine/parallel/rank_placement.h"
#include "engine/parallel/rendezvous.h"
#include "engine/parallel/routing_sampler.h"
#include "engine/server/active_watch.h"
#include "engine/server/device_backend.h"
#include "engine/server/engine_metrics.h"
#include "engine/server/engine_service.h"
#include "engine/server/planner_fetch.h"
#include "glog/logging.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"

namespace semmoe::engine {
namespace {

// The placement's and tables' bytes, from files or from the planner, named for errors.
absl::StatusOr<PlacementSource> FetchVersion(const RankServerOptions& o, int64_t version) {
  const bool tables = o.attention == AttentionMode::kTp;
  ASSIGN_OR_RETURN(FetchedVersion v, FetchPlacementVersion(o.planner, version, tables));
  const std::string name = absl::StrCat("version ", version, " (planner ", o.planner, ")");
  return PlacementSource{.version = version,
                         .placement_json = std::move(v.placement_json),
                         .affinity = std::move(v.affinity),
                         .layer_tables = std::move(v.layer_tables),
                         .placement_name = absl::StrCat(name, "'s placement"),
                         .affinity_name = absl::StrCat(name, "'s affinity tables"),
                         .layers_name = absl::StrCat(name, "'s layer tables")};
}

absl::StatusOr<PlacementSource> ReadPlacement(const RankServerOptions& o) {
  if (!o.planner.empty()) {
    int64_t version = 0;
    if (!absl::SimpleAtoi(o.placement, &version) || version <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("with --planner, --placement names a placement version (a number); got '",
                       o.placement, "'"));
    }
    return FetchVersion(o, version);
  }
  PlacementSource b;
  if (o.placement != "vanilla") {
    ASSIGN_OR_RETURN(b.placement_json, ReadFile(o.placement));
    b.placement_name = o.placement;
  }
  if (o.attention == AttentionMode::kTp && !o.affinity.empty()) {
    ASSIGN_OR_RETURN(b.affinity, ReadFile(o.affinity));
    b.affinity_name = o.affinity;
    if (!o.layer_tables.empty()) {
      ASSIGN_OR_RETURN(b.layer_tables, ReadFile(o.layer_tables));
      b.layers_name = o.layer_tables;
    }
  }
  return b;
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
  if (!o.follow_model.empty() && o.planner.empty()) {
    return absl::InvalidArgumentError("--follow_active needs --planner");
  }
  ASSIGN_OR_RETURN(const PlacementSource source, ReadPlacement(o));
  ASSIGN_OR_RETURN(std::unique_ptr<RankPlacement> placement,
                   BuildRankPlacement(source, config, o.ranks, o.use_layer_tables));
  const std::string serving_with = placement->description;

  LOG(INFO) << "rank " << o.rank << "/" << o.ranks << ": joining the group via " << o.rendezvous;
  ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm, ConnectGloo({.address = o.rendezvous,
                                                                    .rank = o.rank,
                                                                    .size = o.ranks,
                                                                    .hostname = o.host,
                                                                    .timeout = o.connect_timeout}));
  ASSIGN_OR_RETURN(
      std::unique_ptr<RankModel> model,
      RankModel::Create(o.model_dir, std::move(placement), *comm,
                        {.attention = o.attention, .token_balance_eps = o.token_balance_eps}));
  // Every rank takes part in rollouts (the leader proposes); each fetches the version itself.
  PlacementRollout::Stager stager;
  std::string no_stager;
  if (cuda != nullptr) {
    no_stager = "this group serves from GPUs, where live rollouts are not implemented yet";
  } else if (o.planner.empty()) {
    no_stager = "this group was started without --planner";
  } else {
    stager = [&o, &config](int64_t version) -> absl::StatusOr<std::unique_ptr<RankPlacement>> {
      ASSIGN_OR_RETURN(const PlacementSource source, FetchVersion(o, version));
      return BuildRankPlacement(source, config, o.ranks, o.use_layer_tables);
    };
  }
  PlacementRollout rollout(*model, std::move(stager), no_stager, o.rollout_mb_per_s);
  std::unique_ptr<RoutingSampler> sampler;
  if (o.sample_routing > 0) {
    if (o.attention != AttentionMode::kDp || cuda != nullptr) {
      return absl::InvalidArgumentError(
          "--sample_routing samples Attention-DP ranks on the CPU forward only");
    }
    ASSIGN_OR_RETURN(sampler,
                     RoutingSampler::Create(config, {.share = o.sample_routing,
                                                     .max_tokens = o.routing_sample_tokens,
                                                     .path = o.routing_trace,
                                                     .seed = static_cast<uint64_t>(o.rank) + 1,
                                                     .name_prefix = absl::StrCat("rank", o.rank)}));
  }
  GroupEngineOptions engine_options = o.engine;
  engine_options.rollout = &rollout;
  engine_options.routing_sampler = sampler.get();
  engine_options.batch.tokenizer = model->tokenizer();
  if (engine_options.batch.eos_ids.empty()) engine_options.batch.eos_ids = config.eos_token_ids;
  std::unique_ptr<DeviceSession> device;  // Outlives the engine (declared first).
  if (cuda != nullptr) {
    ASSIGN_OR_RETURN(device, cuda->UseForServing(config, model->weights(), model->placement(),
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

  std::unique_ptr<ActiveWatch> watch;  // The leader follows the active version.
  std::function<std::string()> watch_error;
  if (!o.follow_model.empty() && o.rank == 0) {
    // Each version once: the planner announces the active one again after a reconnect.
    watch = std::make_unique<ActiveWatch>(o.planner, o.follow_model,
                                          [&rollout, last = int64_t{0}](int64_t v) mutable {
                                            if (v != last) rollout.Propose(v);
                                            last = v;
                                          });
    watch_error = [&watch] { return watch->error(); };
  }
  std::function<void(int64_t)> propose;
  if (o.rank == 0 && !o.planner.empty() && cuda == nullptr) {
    propose = [&rollout](int64_t v) { rollout.Propose(v); };
  }
  EngineServiceImpl service(*engine, {.tokenizer = model->tokenizer(),
                                      .vocab_size = config.vocab_size,
                                      .max_prompt_tokens = config.max_position_embeddings,
                                      .moe_layers = config.MoeLayers(),
                                      .watch_error = watch_error,
                                      .rollout = propose});
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::StrCat(o.host, ":", o.port), semmoe::ServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", o.host, ":", o.port));
  }
  std::unique_ptr<metrics::MetricsServer> metrics;  // Stopped before `service` goes.
  if (o.metrics_port >= 0) {
    ASSIGN_OR_RETURN(metrics, metrics::MetricsServer::Start(o.host, o.metrics_port, [&service] {
                       return EngineMetricsText(service.Stats());
                     }));
    if (!o.metrics_port_file.empty()) {
      RETURN_IF_ERROR(
          WriteFileAtomically(o.metrics_port_file, absl::StrCat(metrics->port(), "\n")));
    }
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
  metrics.reset();
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
