#include "planner/server/planner_service.h"

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"

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

grpc::Status PlannerServiceImpl::ListVersions(grpc::ServerContext*,
                                              const rpc::ListVersionsRequest* request,
                                              rpc::ListVersionsResponse* response) {
  absl::MutexLock lock(&mu_);
  auto versions = store_->List(request->model());
  if (!versions.ok()) return ToGrpcStatus(versions.status());
  for (const auto& v : *versions) ToProto(v, false, *response->add_versions());
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::GetVersion(grpc::ServerContext*, const rpc::GetVersionRequest* request,
                                            Proto* response) {
  absl::MutexLock lock(&mu_);
  auto v = store_->Get(request->version());
  if (!v.ok()) return ToGrpcStatus(v.status());
  ToProto(*v, true, *response);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::GetActive(grpc::ServerContext*, const rpc::GetActiveRequest* request,
                                           Proto* response) {
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

grpc::Status PlannerServiceImpl::Activate(grpc::ServerContext*, const rpc::ActivateRequest* request,
                                          rpc::ActivateResponse*) {
  absl::MutexLock lock(&mu_);
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

grpc::Status PlannerServiceImpl::GetAffinityTables(grpc::ServerContext*,
                                                   const rpc::GetVersionRequest* request,
                                                   rpc::AffinityTables* response) {
  absl::MutexLock lock(&mu_);
  auto tables = store_->GetAffinityTables(request->version());
  if (!tables.ok()) return ToGrpcStatus(tables.status());
  response->set_version(request->version());
  response->set_format(1);
  response->set_data(std::move(*tables));
  return grpc::Status::OK;
}

}  // namespace semmoe::planner
