#include "engine/parallel/grpc_store.h"

#include "absl/strings/str_cat.h"
#include "common/security.h"
#include "gloo/common/error.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace semmoe::engine {
namespace {

// Extra time the RPC deadline allows beyond the server-side wait, for the round trip.
constexpr std::chrono::milliseconds kRpcSlack(2000);

[[noreturn]] void Throw(const std::string& what, const grpc::Status& status) {
  throw gloo::IoException(absl::StrCat("rendezvous store ", what, ": ", status.error_message(),
                                       " (grpc code ", static_cast<int>(status.error_code()), ")"));
}

}  // namespace

GrpcStore::GrpcStore(const std::string& target, std::chrono::milliseconds default_wait)
    : stub_(rendezvous::RendezvousStore::NewStub(semmoe::NewChannel(target))),
      default_wait_(default_wait) {}

void GrpcStore::set(const std::string& key, const std::vector<char>& data) {
  rendezvous::SetRequest request;
  request.set_key(key);
  request.set_value(std::string(data.begin(), data.end()));
  rendezvous::SetResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kRpcSlack * 5);
  const grpc::Status status = stub_->Set(&context, request, &response);
  if (!status.ok()) Throw(absl::StrCat("set \"", key, "\""), status);
}

std::vector<std::vector<char>> GrpcStore::Fetch(const std::vector<std::string>& keys,
                                                std::chrono::milliseconds timeout) {
  rendezvous::GetRequest request;
  for (const std::string& key : keys) request.add_keys(key);
  request.set_timeout_ms(timeout.count());
  rendezvous::GetResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout + kRpcSlack);
  const grpc::Status status = stub_->Get(&context, request, &response);
  if (!status.ok()) Throw("get", status);
  if (response.values_size() != static_cast<int>(keys.size())) {
    Throw("get", grpc::Status(grpc::StatusCode::INTERNAL,
                              absl::StrCat("asked for ", keys.size(), " keys, got ",
                                           response.values_size(), " values")));
  }
  std::vector<std::vector<char>> values;
  for (const std::string& value : response.values())
    values.emplace_back(value.begin(), value.end());
  return values;
}

std::vector<char> GrpcStore::get(const std::string& key) {
  return Fetch({key}, default_wait_).front();
}

void GrpcStore::wait(const std::vector<std::string>& keys) { wait(keys, default_wait_); }

void GrpcStore::wait(const std::vector<std::string>& keys,
                     const std::chrono::milliseconds& timeout) {
  Fetch(keys, timeout);
}

}  // namespace semmoe::engine
