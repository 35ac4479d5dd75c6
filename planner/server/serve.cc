#include "planner/server/serve.h"

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "common/security.h"
#include "common/status_macros.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"

namespace semmoe::planner {

namespace {

// One gauge saying the database could not be read, with why.
std::string MetricsError(const absl::Status& s) {
  metrics::Families f;
  f.Gauge("semmoe_planner_database_ok", "0 when the planner cannot read its database.",
          {{"error", std::string(s.message())}}, 0);
  return f.Text();
}

}  // namespace

absl::StatusOr<std::unique_ptr<PlannerServer>> PlannerServer::Start(const Options& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PlacementStore> store, PlacementStore::Open(options.db));
  std::unique_ptr<PlannerServer> server(new PlannerServer());
  PlannerServiceImpl::Options service = options.service;
  service.serving = &server->serving_;
  server->planner_ = std::make_unique<PlannerServiceImpl>(std::move(store), service);
  server->rendezvous_ = std::make_unique<rendezvous::RendezvousService>(server->kv_);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.address, semmoe::ServerCredentials(), &server->port_);
  builder.RegisterService(server->planner_.get());
  builder.RegisterService(server->rendezvous_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.address));
  }
  if (options.metrics_port >= 0) {
    PlannerServiceImpl* planner = server->planner_.get();
    ASSIGN_OR_RETURN(server->metrics_,
                     metrics::MetricsServer::Start(
                         options.metrics_listen, options.metrics_port, [planner]() -> std::string {
                           absl::StatusOr<std::string> text = planner->MetricsText();
                           // A scrape of a broken database still
                           // says so, as a metric.
                           return text.ok() ? *text : MetricsError(text.status());
                         }));
  }
  if (options.autopilot.has_value()) {
    AutopilotOptions autopilot = *options.autopilot;
    autopilot.serving = &server->serving_;
    ASSIGN_OR_RETURN(server->autopilot_,
                     AutopilotRunner::Start(autopilot, options.autopilot_period));
  }
  return server;
}

void PlannerServer::Shutdown() {
  if (autopilot_) autopilot_->Stop();
  metrics_.reset();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

PlannerServer::~PlannerServer() { Shutdown(); }

}  // namespace semmoe::planner
