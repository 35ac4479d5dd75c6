#include "planner/server/planner_service.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/security.h"
#include "common/status_macros.h"
#include "planner/affinity/prompt_score_table.h"
#include "planner/affinity/token_affinity.h"
#include "planner/proto/table_chunks.h"
#include "planner/server/planner_metrics.h"
#include "planner/store/autopilot_store.h"
#include "planner/store/experiment_store.h"

namespace semmoe::planner {
namespace {

using Proto = rpc::PlacementVersion;

void ToProto(const planner::PlacementVersion& v, bool with_assignment, Proto& out) {
  out.set_version(v.version);
  out.set_model(v.model);
  out.set_name(v.name);
  out.set_parent(v.parent.value_or(0));
  out.set_algorithm(v.algorithm);
  out.set_params_json(v.params_json);
  out.set_metrics_json(v.metrics_json);
  out.set_status(v.status);
  out.set_created_unix_micros(absl::ToUnixMicros(v.created));
  out.set_num_devices(v.placement.num_devices());
  if (with_assignment) out.set_placement_json(v.placement.ToJson());
}

}  // namespace

absl::StatusOr<std::string> PlannerServiceImpl::MetricsText() {
  absl::MutexLock lock(&mu_);
  return PlannerMetricsText(*store_);
}

grpc::Status PlannerServiceImpl::ListVersions(grpc::ServerContext*,
                                              const rpc::ListVersionsRequest* request,
                                              rpc::ListVersionsResponse* response) {
  absl::MutexLock lock(&mu_);
  auto versions = store_->List(request->model());
  if (!versions.ok()) return ToGrpcStatus(versions.status());
  for (const auto& v : *versions) ToProto(v, false, *response->add_versions());
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::GetVersion(grpc::ServerContext*,
                                            const rpc::GetVersionRequest* request,
                                            Proto* response) {
  absl::MutexLock lock(&mu_);
  auto v = store_->Get(request->version());
  if (!v.ok()) return ToGrpcStatus(v.status());
  ToProto(*v, true, *response);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::GetActive(grpc::ServerContext*,
                                           const rpc::GetActiveRequest* request, Proto* response) {
  absl::MutexLock lock(&mu_);
  auto v = store_->Active(request->model());
  if (!v.ok()) return ToGrpcStatus(v.status());
  if (!v->has_value()) {
    return ToGrpcStatus(absl::NotFoundError(
        absl::StrCat("model '", request->model(), "' has no active placement")));
  }
  ToProto(**v, true, *response);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::Activate(grpc::ServerContext* context,
                                          const rpc::ActivateRequest* request,
                                          rpc::ActivateResponse*) {
  // A mutation: the bearer token, when one is configured.
  if (grpc::Status auth = CheckToken(*context); !auth.ok()) return auth;
  absl::MutexLock lock(&mu_);
  if (!request->force()) {
    if (absl::Status guard = store_->CheckPredictedNotSlower(request->version()); !guard.ok()) {
      return ToGrpcStatus(guard);
    }
  }
  return ToGrpcStatus(store_->Activate(request->version()));
}

grpc::Status PlannerServiceImpl::WatchActive(grpc::ServerContext* context,
                                             const rpc::GetActiveRequest* request,
                                             grpc::ServerWriter<Proto>* writer) {
  int64_t sent = -1;  // Version last sent; -1: nothing yet.
  while (!context->IsCancelled()) {
    std::optional<planner::PlacementVersion> active;
    {
      absl::MutexLock lock(&mu_);
      auto v = store_->Active(request->model());
      if (!v.ok()) return ToGrpcStatus(v.status());
      active = std::move(*v);
    }
    if (active.has_value() && active->version != sent) {
      Proto proto;
      ToProto(*active, true, proto);
      if (!writer->Write(proto)) return grpc::Status::OK;  // The client went away.
      sent = active->version;
    }
    options_.clock->SleepFor(options_.poll_interval);
  }
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::StreamStoredTable(
    int64_t version, absl::StatusOr<std::string> (PlacementStore::*get)(int64_t),
    grpc::ServerWriter<rpc::TableChunk>* writer) {
  absl::StatusOr<std::string> table;
  {
    absl::MutexLock lock(&mu_);
    table = ((*store_).*get)(version);
  }
  if (!table.ok()) return ToGrpcStatus(table.status());
  WriteTableChunks(*writer, version, *table);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::GetAffinityTables(grpc::ServerContext*,
                                                   const rpc::GetVersionRequest* request,
                                                   grpc::ServerWriter<rpc::TableChunk>* writer) {
  return StreamStoredTable(request->version(), &PlacementStore::GetAffinityTables, writer);
}

grpc::Status PlannerServiceImpl::GetLayerTables(grpc::ServerContext*,
                                                const rpc::GetVersionRequest* request,
                                                grpc::ServerWriter<rpc::TableChunk>* writer) {
  return StreamStoredTable(request->version(), &PlacementStore::GetLayerTables, writer);
}

absl::StatusOr<std::shared_ptr<const std::string>> PlannerServiceImpl::PromptScores(int64_t version,
                                                                                    uint32_t vocab,
                                                                                    int ranks) {
  auto wrong_ranks = [&](int devices) {
    return absl::FailedPreconditionError(absl::StrCat("version ", version, " places experts on ",
                                                      devices, " devices; the router serves ",
                                                      ranks, " ranks"));
  };
  {
    absl::MutexLock lock(&cache_mu_);
    for (const CachedScores& c : cache_) {
      if (c.version != version || c.vocab != vocab) continue;
      if (c.devices != ranks) return wrong_ranks(c.devices);
      return c.bytes;
    }
  }
  std::optional<Placement> placement;
  std::string tables;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(planner::PlacementVersion v, store_->Get(version));
    placement = std::move(v.placement);
    ASSIGN_OR_RETURN(tables, store_->GetAffinityTables(version));
  }
  if (placement->num_devices() != ranks) return wrong_ranks(placement->num_devices());
  absl::StatusOr<TokenAffinity> affinity = TokenAffinity::Deserialize(tables);
  if (!affinity.ok()) {
    return absl::DataLossError(absl::StrCat(
        "version ", version, "'s stored affinity tables: ", affinity.status().message()));
  }
  ASSIGN_OR_RETURN(PromptScoreTable table,
                   PromptScoreTable::FromAffinity(*affinity, *placement, vocab));
  auto bytes = std::make_shared<const std::string>(table.Serialize());
  absl::MutexLock lock(&cache_mu_);
  cache_.push_back({version, vocab, placement->num_devices(), bytes});
  if (cache_.size() > kCachedScoreTables) cache_.pop_front();
  return bytes;
}

grpc::Status PlannerServiceImpl::GetPromptScores(grpc::ServerContext*,
                                                 const rpc::PromptScoresRequest* request,
                                                 grpc::ServerWriter<rpc::TableChunk>* writer) {
  if (request->vocab() < 1 || request->vocab() > PromptScoreTable::kMaxVocab) {
    return ToGrpcStatus(absl::InvalidArgumentError(absl::StrCat(
        "vocab ", request->vocab(), " is not in [1, ", PromptScoreTable::kMaxVocab, "]")));
  }
  absl::StatusOr<std::shared_ptr<const std::string>> bytes =
      PromptScores(request->version(), static_cast<uint32_t>(request->vocab()), request->ranks());
  if (!bytes.ok()) return ToGrpcStatus(bytes.status());
  WriteTableChunks(*writer, request->version(), **bytes);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::ExperimentProto(int64_t id, rpc::Experiment* out) {
  ExperimentStore experiments(*store_);
  absl::StatusOr<Experiment> e = experiments.Get(id);
  if (!e.ok()) return ToGrpcStatus(e.status());
  out->set_id(e->id);
  out->set_model(e->model);
  out->set_name(e->name);
  out->set_status(e->status);
  absl::StatusOr<MeasuredAgainstVanilla> measured = experiments.MeasuredVsVanilla(*e);
  if (!measured.ok()) return ToGrpcStatus(measured.status());
  out->set_vanilla_arm(measured->vanilla_arm);
  for (const ExperimentArm& arm : e->arms) {
    rpc::ExperimentArm* a = out->add_arms();
    a->set_name(arm.name);
    a->set_version(arm.version);
    a->set_share_percent(arm.share_percent);
    a->set_latest_metrics_json(arm.latest_metrics_json);
    if (auto r = measured->moe_ratio.find(arm.name); r != measured->moe_ratio.end()) {
      a->set_moe_vs_vanilla_arm(r->second);
    }
  }
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::CreateExperiment(grpc::ServerContext* context,
                                                  const rpc::CreateExperimentRequest* request,
                                                  rpc::Experiment* response) {
  // A mutation: the bearer token, when one is configured.
  if (grpc::Status auth = CheckToken(*context); !auth.ok()) return auth;
  std::vector<ExperimentArm> arms;
  for (const rpc::ExperimentArm& a : request->arms()) {
    arms.push_back({.name = a.name(), .version = a.version(), .share_percent = a.share_percent()});
  }
  absl::MutexLock lock(&mu_);
  ExperimentStore experiments(*store_);
  absl::StatusOr<int64_t> id = experiments.Create(request->model(), request->name(), arms);
  if (!id.ok()) return ToGrpcStatus(id.status());
  return ExperimentProto(*id, response);
}

grpc::Status PlannerServiceImpl::StartExperiment(grpc::ServerContext* context,
                                                 const rpc::ExperimentId* request,
                                                 rpc::Experiment* response) {
  // A mutation: the bearer token, when one is configured.
  if (grpc::Status auth = CheckToken(*context); !auth.ok()) return auth;
  absl::MutexLock lock(&mu_);
  ExperimentStore experiments(*store_);
  if (absl::Status s = experiments.Start(request->id()); !s.ok()) return ToGrpcStatus(s);
  return ExperimentProto(request->id(), response);
}

grpc::Status PlannerServiceImpl::StopExperiment(grpc::ServerContext* context,
                                                const rpc::ExperimentId* request,
                                                rpc::Experiment* response) {
  // A mutation: the bearer token, when one is configured.
  if (grpc::Status auth = CheckToken(*context); !auth.ok()) return auth;
  absl::MutexLock lock(&mu_);
  ExperimentStore experiments(*store_);
  if (absl::Status s = experiments.Stop(request->id()); !s.ok()) return ToGrpcStatus(s);
  return ExperimentProto(request->id(), response);
}

grpc::Status PlannerServiceImpl::PromoteExperiment(grpc::ServerContext* context,
                                                   const rpc::PromoteExperimentRequest* request,
                                                   rpc::Experiment* response) {
  // A mutation: the bearer token, when one is configured.
  if (grpc::Status auth = CheckToken(*context); !auth.ok()) return auth;
  absl::MutexLock lock(&mu_);
  ExperimentStore experiments(*store_);
  absl::StatusOr<int64_t> version =
      experiments.Promote(request->id(), request->arm(), request->force());
  if (!version.ok()) return ToGrpcStatus(version.status());
  return ExperimentProto(request->id(), response);
}

grpc::Status PlannerServiceImpl::GetExperiment(grpc::ServerContext*,
                                               const rpc::ExperimentId* request,
                                               rpc::Experiment* response) {
  absl::MutexLock lock(&mu_);
  return ExperimentProto(request->id(), response);
}

grpc::Status PlannerServiceImpl::ListExperiments(grpc::ServerContext*,
                                                 const rpc::ListExperimentsRequest* request,
                                                 rpc::ListExperimentsResponse* response) {
  absl::MutexLock lock(&mu_);
  ExperimentStore experiments(*store_);
  absl::StatusOr<std::vector<Experiment>> all = experiments.List(request->model());
  if (!all.ok()) return ToGrpcStatus(all.status());
  for (const Experiment& e : *all) {
    if (grpc::Status s = ExperimentProto(e.id, response->add_experiments()); !s.ok()) return s;
  }
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::ListAutopilotDecisions(
    grpc::ServerContext*, const rpc::ListAutopilotDecisionsRequest* request,
    rpc::ListAutopilotDecisionsResponse* response) {
  if (request->limit() < 0 || request->limit() > 1000) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "limit must be in [0, 1000]");
  }
  absl::MutexLock lock(&mu_);
  AutopilotStore decisions(*store_);
  absl::StatusOr<std::vector<AutopilotDecision>> latest =
      decisions.Latest(request->model(), request->limit() == 0 ? 20 : request->limit());
  if (!latest.ok()) return ToGrpcStatus(latest.status());
  for (const AutopilotDecision& d : *latest) {
    rpc::AutopilotDecision* out = response->add_decisions();
    out->set_id(d.id);
    out->set_at_unix_micros(absl::ToUnixMicros(d.at));
    out->set_action(d.action);
    out->set_reason(d.reason);
    out->set_served_version(d.served_version);
    out->set_candidate_version(d.candidate_version);
    out->set_moved_experts(d.moved_experts);
    out->set_figures_json(d.figures_json);
    out->set_repeats(d.repeats);
    out->set_last_at_unix_micros(absl::ToUnixMicros(d.last_at));
  }
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::RecordArmMetrics(grpc::ServerContext* context,
                                                  const rpc::RecordArmMetricsRequest* request,
                                                  rpc::RecordArmMetricsResponse*) {
  // A mutation: the bearer token, when one is configured.
  if (grpc::Status auth = CheckToken(*context); !auth.ok()) return auth;
  absl::MutexLock lock(&mu_);
  ExperimentStore experiments(*store_);
  return ToGrpcStatus(
      experiments.RecordArmMetrics(request->id(), request->arm(), request->metrics_json()));
}

grpc::Status PlannerServiceImpl::ReportServing(grpc::ServerContext* context,
                                               const rpc::ServingReport* request,
                                               rpc::ReportServingResponse*) {
  // What the autopilot acts on: the bearer token, when one is configured.
  if (grpc::Status auth = CheckToken(*context); !auth.ok()) return auth;
  if (options_.serving == nullptr) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no serving reports here");
  }
  return ToGrpcStatus(options_.serving->Report({.model = request->model(),
                                                .group = request->group(),
                                                .ranks = request->ranks(),
                                                .serving_version = request->serving_version(),
                                                .rollout_target = request->rollout_target(),
                                                .refused_version = request->refused_version(),
                                                .refusal = request->refusal(),
                                                .completed = request->completed(),
                                                .failed = request->failed(),
                                                .local_activations = request->local_activations(),
                                                .remote_activations = request->remote_activations(),
                                                .output_tokens = request->output_tokens(),
                                                .request_seconds = request->request_seconds(),
                                                .at = options_.clock->Now()}));
}

grpc::Status PlannerServiceImpl::Rollback(grpc::ServerContext* context,
                                          const rpc::GetActiveRequest* request, Proto* response) {
  // A mutation: the bearer token, when one is configured.
  if (grpc::Status auth = CheckToken(*context); !auth.ok()) return auth;
  absl::MutexLock lock(&mu_);
  absl::StatusOr<int64_t> version = store_->Rollback(request->model());
  if (!version.ok()) return ToGrpcStatus(version.status());
  absl::StatusOr<planner::PlacementVersion> v = store_->Get(*version);
  if (!v.ok()) return ToGrpcStatus(v.status());
  ToProto(*v, true, *response);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::DiffVersions(grpc::ServerContext*, const rpc::DiffRequest* request,
                                              rpc::Report* response) {
  if (!options_.diff) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no diff here");
  absl::StatusOr<std::string> json = options_.diff(request->from(), request->to());
  if (!json.ok()) return ToGrpcStatus(json.status());
  response->set_json(*json);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::GetDrift(grpc::ServerContext*, const rpc::DriftRequest* request,
                                          rpc::Report* response) {
  if (!options_.drift) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no drift here");
  absl::StatusOr<std::string> json = options_.drift(*request);
  if (!json.ok()) return ToGrpcStatus(json.status());
  response->set_json(*json);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::EvaluateVersions(grpc::ServerContext*,
                                                  const rpc::EvaluateRequest* request,
                                                  rpc::Report* response) {
  if (!options_.evaluate)
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no evaluation here");
  absl::StatusOr<std::string> json = options_.evaluate(*request);
  if (!json.ok()) return ToGrpcStatus(json.status());
  response->set_json(*json);
  return grpc::Status::OK;
}

}  // namespace semmoe::planner
