#include "engine/server/planner_fetch.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/security.h"
#include "common/status_macros.h"
#include "grpcpp/grpcpp.h"
#include "planner/proto/planner.grpc.pb.h"
#include "planner/proto/table_chunks.h"

namespace semmoe::engine {
namespace {

constexpr size_t kMaxTableBytes = size_t{1} << 32;

using Stub = planner::rpc::PlannerService::Stub;
using Reader = grpc::ClientReader<planner::rpc::TableChunk>;

// One table; "" when the version has none.
absl::StatusOr<std::string> Table(
    Stub& stub, int64_t version, absl::Time deadline,
    std::unique_ptr<Reader> (Stub::*call)(grpc::ClientContext*,
                                          const planner::rpc::GetVersionRequest&)) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  planner::rpc::GetVersionRequest request;
  request.set_version(version);
  absl::StatusOr<std::string> table =
      planner::ReadTableChunks(*(stub.*call)(&context, request), kMaxTableBytes);
  if (!table.ok() && table.status().code() == absl::StatusCode::kNotFound) return "";
  return table;
}

}  // namespace

absl::StatusOr<FetchedVersion> FetchPlacementVersion(const std::string& planner, int64_t version,
                                                     bool with_tables, absl::Duration timeout) {
  auto stub = planner::rpc::PlannerService::NewStub(semmoe::NewChannel(planner));
  const absl::Time deadline = absl::Now() + timeout;
  auto failed = [&](const absl::Status& s, const char* what) {
    return absl::Status(s.code(), absl::StrCat("planner ", planner, ": version ", version, "'s ",
                                               what, ": ", s.message()));
  };
  FetchedVersion out;
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    planner::rpc::GetVersionRequest request;
    request.set_version(version);
    planner::rpc::PlacementVersion v;
    if (absl::Status s = FromGrpcStatus(stub->GetVersion(&context, request, &v)); !s.ok()) {
      return failed(s, "placement");
    }
    out.placement_json = v.placement_json();
  }
  if (!with_tables) return out;
  absl::StatusOr<std::string> affinity = Table(*stub, version, deadline, &Stub::GetAffinityTables);
  if (!affinity.ok()) return failed(affinity.status(), "affinity tables");
  out.affinity = *std::move(affinity);
  absl::StatusOr<std::string> layers = Table(*stub, version, deadline, &Stub::GetLayerTables);
  if (!layers.ok()) return failed(layers.status(), "layer tables");
  out.layer_tables = *std::move(layers);
  return out;
}

absl::StatusOr<PlacementSource> FetchPlacementSource(const std::string& planner, int64_t version,
                                                     bool with_tables) {
  ASSIGN_OR_RETURN(FetchedVersion v, FetchPlacementVersion(planner, version, with_tables));
  const std::string name = absl::StrCat("version ", version, " (planner ", planner, ")");
  return PlacementSource{.version = version,
                         .placement_json = std::move(v.placement_json),
                         .affinity = std::move(v.affinity),
                         .layer_tables = std::move(v.layer_tables),
                         .placement_name = absl::StrCat(name, "'s placement"),
                         .affinity_name = absl::StrCat(name, "'s affinity tables"),
                         .layers_name = absl::StrCat(name, "'s layer tables")};
}

}  // namespace semmoe::engine
