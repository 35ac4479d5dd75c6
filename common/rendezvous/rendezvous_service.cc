#include "common/rendezvous/rendezvous_service.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/security.h"

namespace semmoe::rendezvous {
namespace {

// Waits are cut into slices so a cancelled call stops waiting promptly.
constexpr absl::Duration kWaitSlice = absl::Milliseconds(100);

}  // namespace

grpc::Status RendezvousService::Set(grpc::ServerContext* context, const SetRequest* request,
                                    SetResponse* /*response*/) {
  // Ranks meet through this store: with a token configured, only its holders may write.
  if (grpc::Status auth = CheckToken(*context); !auth.ok()) return auth;
  return ToGrpcStatus(store_.Set(request->key(), request->value()));
}

grpc::Status RendezvousService::Get(grpc::ServerContext* context, const GetRequest* request,
                                    GetResponse* response) {
  const std::vector<std::string> keys(request->keys().begin(), request->keys().end());
  const absl::Duration wait = absl::Milliseconds(std::max<int64_t>(0, request->timeout_ms()));
  const absl::Time deadline = std::min(absl::Now() + wait, absl::FromChrono(context->deadline()));
  auto missing = [](const absl::Status& s) {
    return s.code() == absl::StatusCode::kNotFound ||
           s.code() == absl::StatusCode::kDeadlineExceeded;
  };
  absl::StatusOr<std::vector<std::string>> values = store_.Get(keys, absl::ZeroDuration());
  while (!values.ok() && missing(values.status()) && absl::Now() < deadline &&
         !context->IsCancelled()) {
    values = store_.Get(keys, std::min(kWaitSlice, deadline - absl::Now()));
  }
  if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "get cancelled");
  if (!values.ok()) {
    if (missing(values.status())) {
      // Say how the wait ended, whichever slice ended it.
      return grpc::Status(wait > absl::ZeroDuration() ? grpc::StatusCode::DEADLINE_EXCEEDED
                                                      : grpc::StatusCode::NOT_FOUND,
                          std::string(values.status().message()));
    }
    return ToGrpcStatus(values.status());
  }
  for (std::string& value : *values) response->add_values(std::move(value));
  return grpc::Status::OK;
}

}  // namespace semmoe::rendezvous
