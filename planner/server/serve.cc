#include "planner/server/serve.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"

namespace semmoe::planner {

absl::StatusOr<std::unique_ptr<PlannerServer>> PlannerServer::Start(const Options& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PlacementStore> store, PlacementStore::Open(options.db));
  std::unique_ptr<PlannerServer> server(new PlannerServer());
  server->planner_ = std::make_unique<PlannerServiceImpl>(std::move(store), options.service);
  server->rendezvous_ = std::make_unique<rendezvous::RendezvousService>(server->kv_);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.address, grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterService(server->planner_.get());
  builder.RegisterService(server->rendezvous_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.address));
  }
  return server;
}

void PlannerServer::Shutdown() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

PlannerServer::~PlannerServer() { Shutdown(); }

}  // namespace semmoe::planner
