#include "engine/server/rank_server.h"

#include <memory>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/metrics_server.h"
#include "common/security.h"
#include "common/status_macros.h"
#include "engine/backend/device_backend.h"
#include "engine/parallel/group_epoch.h"
#include "engine/server/active_watch.h"
#include "engine/server/engine_metrics.h"
#include "engine/server/engine_service.h"
#include "engine/server/planner_fetch.h"
#include "engine/server/rank_group.h"
#include "engine/server/serving_reporter.h"
#include "engine/text/config.h"
#include "glog/logging.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"

namespace semmoe::engine {
namespace {

// The placement's and tables' bytes, from files or from the planner, named for errors.
absl::StatusOr<PlacementSource> ReadPlacement(const RankServerOptions& o) {
  if (!o.planner.empty()) {
    int64_t version = 0;
    if (!absl::SimpleAtoi(o.placement, &version) || version <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("with --planner, --placement names a placement version (a number); got '",
                       o.placement, "'"));
    }
    return FetchPlacementSource(o.planner, version, o.attention == AttentionMode::kTp);
  }
  PlacementSource b;
  if (o.placement != "vanilla") {
    ASSIGN_OR_RETURN(b.placement_json, ReadFlagFile("placement", o.placement));
    b.placement_name = o.placement;
  }
  if (o.attention == AttentionMode::kTp && !o.affinity.empty()) {
    ASSIGN_OR_RETURN(b.affinity, ReadFlagFile("affinity", o.affinity, kMaxDataFileBytes));
    b.affinity_name = o.affinity;
    if (!o.layer_tables.empty()) {
      ASSIGN_OR_RETURN(b.layer_tables,
                       ReadFlagFile("layer_tables", o.layer_tables, kMaxDataFileBytes));
      b.layers_name = o.layer_tables;
    }
  }
  return b;
}

// The formed group this rank serves with, shared with the watch and the Rollout RPC.
class CurrentGroup {
 public:
  void Set(std::shared_ptr<RankGroup> group) {
    absl::MutexLock lock(&mu_);
    group_ = std::move(group);
    if (group_ != nullptr && active_ > 0) group_->rollout->Propose(active_);
  }
  // The leader proposes `version` now and again to each later formation (which starts from the
  // launch placement). 0: only now.
  void Propose(int64_t version, bool remember) {
    absl::MutexLock lock(&mu_);
    if (remember) active_ = version;
    if (group_ != nullptr) group_->rollout->Propose(version);
  }

 private:
  absl::Mutex mu_;
  std::shared_ptr<RankGroup> group_ ABSL_GUARDED_BY(mu_);
  int64_t active_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

absl::Status RunRankServer(const RankServerOptions& o, absl::Notification& stop) {
  if (o.ranks < 1 || o.rank < 0 || o.rank >= o.ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", o.rank, " is not in a group of ", o.ranks));
  }
  DeviceBackend* cuda = nullptr;  // Asked before joining: a build without it fails at once.
  if (o.cuda_device >= 0) {
    ASSIGN_OR_RETURN(cuda, GetDeviceBackend("cuda"));
  }
  ASSIGN_OR_RETURN(const model::ModelConfig config, model::LoadModelConfig(o.model_dir));
  if (!o.follow_model.empty() && o.planner.empty()) {
    return absl::InvalidArgumentError("--follow_active needs --planner");
  }
  ASSIGN_OR_RETURN(const PlacementSource source, ReadPlacement(o));
  std::unique_ptr<model::Tokenizer> tokenizer;
  if (auto t = model::Tokenizer::FromDirectory(o.model_dir); t.ok()) {
    tokenizer = std::move(*t);
  } else if (!absl::IsNotFound(t.status())) {
    return t.status();
  }
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
  const RankGroupInputs inputs = {.options = &o,
                                  .config = &config,
                                  .source = &source,
                                  .tokenizer = tokenizer.get(),
                                  .sampler = sampler.get(),
                                  .cuda = cuda};
  const RendezvousOptions rendezvous = {.address = o.rendezvous,
                                        .rank = o.rank,
                                        .size = o.ranks,
                                        .hostname = o.host,
                                        .timeout = o.connect_timeout};

  LOG(INFO) << "rank " << o.rank << "/" << o.ranks << ": joining the group via " << o.rendezvous;
  ASSIGN_OR_RETURN(EpochGroup first,
                   JoinEpoch({.rendezvous = rendezvous,
                              .deadline = absl::Now() + o.connect_timeout,
                              .stop = [&stop] { return stop.HasBeenNotified(); }}));
  ASSIGN_OR_RETURN(std::shared_ptr<RankGroup> group, FormRankGroup(inputs, std::move(first)));
  const std::string serving_with = group->model->placement_description();

  CurrentGroup current;
  current.Set(group);
  std::unique_ptr<ActiveWatch> watch;  // The leader follows the active version.
  std::function<std::string()> watch_error;
  if (!o.follow_model.empty() && o.rank == 0) {
    // Each version once: the planner announces the active one again after a reconnect.
    watch = std::make_unique<ActiveWatch>(o.planner, o.follow_model,
                                          [&current, last = int64_t{0}](int64_t v) mutable {
                                            if (v != last) current.Propose(v, true);
                                            last = v;
                                          });
    watch_error = [&watch] { return watch->error(); };
  }
  std::function<void(int64_t)> propose;
  if (o.rank == 0 && !o.planner.empty() && cuda == nullptr) {
    propose = [&current](int64_t v) { current.Propose(v, false); };
  }
  EngineSlot slot;
  EngineServiceImpl service(slot,
                            {.tokenizer = tokenizer.get(),
                             .vocab_size = config.vocab_size,
                             .max_prompt_tokens = config.max_position_embeddings,
                             .moe_layers = config.MoeLayers(),
                             .watch_error = watch_error,
                             .rollout = propose,
                             .rank = o.rank,
                             .ranks = o.ranks,
                             .attention = AttentionModeName(o.attention),
                             .topology = o.topology ? o.topology->Describe() : "",
                             .node_dedup = o.topology != nullptr && o.topology->num_nodes() > 1 &&
                                           o.topology->num_nodes() < o.ranks,
                             .stall_after = o.stall_after});
  // The slot's engine keeps its whole group alive while calls still hold it.
  slot.Serve(std::shared_ptr<GroupEngine>(group, group->engine.get()), group->epoch);
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
  group->engine->Start();
  if (!o.port_file.empty())
    RETURN_IF_ERROR(WriteFileAtomically(o.port_file, absl::StrCat(port, "\n")));
  LOG(INFO) << "rank " << o.rank << "/" << o.ranks << " (" << AttentionModeName(o.attention)
            << ") serving EngineService on " << o.host << ":" << port;
  if (o.on_serving) o.on_serving(port, serving_with);
  // The leader of a following group tells the planner what the group serves (the autopilot
  // checks its rollouts on it); stopped before `service` goes.
  std::unique_ptr<ServingReporter> reporter;
  if (watch != nullptr) {
    reporter = std::make_unique<ServingReporter>(
        ServingReporter::Options{.planner = o.planner,
                                 .model = o.follow_model,
                                 .group = absl::StrCat(o.host, ":", port),
                                 .stats = [&service] { return service.Stats(); }});
  }

  absl::Status result;
  while (true) {
    // Wait for a stop request or the end of the group's loop (a peer failed or stopped it).
    absl::Notification ended;
    absl::Status loop_status;
    std::thread waiter([&] {
      loop_status = group->engine->Wait();
      ended.Notify();
    });
    while (!stop.HasBeenNotified() && !ended.HasBeenNotified()) {
      stop.WaitForNotificationWithTimeout(absl::Milliseconds(100));
      if (int n = service.AbortIfStalled(); n > 0) {
        LOG(WARNING) << "rank " << o.rank << ": the group stalled; ended " << n
                     << " calls with UNAVAILABLE";
      }
    }
    if (!ended.HasBeenNotified()) {
      LOG(INFO) << "rank " << o.rank << ": stopping the group";
      group->engine->RequestStop();
    }
    waiter.join();
    if (loop_status.ok() || stop.HasBeenNotified()) break;  // An agreed stop, or ours.
    LOG(ERROR) << "rank " << o.rank << ": the group (epoch " << group->epoch
               << ") failed: " << loop_status;
    result = absl::UnavailableError(absl::StrCat(
        "rank ", o.rank, ": the expert-parallel group failed: ", loop_status.message()));
    if (cuda != nullptr) break;  // A GPU group is not re-formed in place: the process restarts.
    // Re-form: drop the broken group (calls still holding it keep it until they end) and meet
    // the others — survivors and the restarted rank — in the next epoch.
    const int64_t failed = group->epoch;
    const std::string cause(loop_status.message());
    slot.Down(absl::StrCat("re-forming the group after epoch ", failed, " failed (", cause, ")"));
    current.Set(nullptr);
    group.reset();
    absl::StatusOr<EpochGroup> joined = JoinEpoch(
        {.rendezvous = rendezvous,
         .failed_epoch = failed,
         .stop = [&stop] { return stop.HasBeenNotified(); },
         .on_round =
             [&](int64_t epoch, const std::string& missing) {
               slot.Down(absl::StrCat(
                   "re-forming the group as epoch ", epoch, " after epoch ", failed, " failed (",
                   cause, ")",
                   missing.empty() ? "" : absl::StrCat("; waiting for rank(s) ", missing)));
             }});
    if (!joined.ok()) {
      if (stop.HasBeenNotified()) {
        result = absl::OkStatus();
        break;
      }
      result = joined.status();
      break;
    }
    absl::StatusOr<std::unique_ptr<RankGroup>> formed = FormRankGroup(inputs, std::move(*joined));
    if (!formed.ok()) {
      result = formed.status();
      break;
    }
    group = std::move(*formed);
    current.Set(group);
    slot.Serve(std::shared_ptr<GroupEngine>(group, group->engine.get()), group->epoch);
    group->engine->Start();
    result = absl::OkStatus();
    LOG(INFO) << "rank " << o.rank << ": the group re-formed as epoch " << group->epoch
              << "; serving again";
  }
  // Nothing may keep the server's shutdown waiting: calls the loop did not end are ended here.
  if (int n = service.AbortAll(absl::UnavailableError("the engine is stopping")); n > 0) {
    LOG(INFO) << "rank " << o.rank << ": ended " << n << " calls still open at stop";
  }
  metrics.reset();
  server->GetHealthCheckService()->SetServingStatus(false);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return result;
}

}  // namespace semmoe::engine
