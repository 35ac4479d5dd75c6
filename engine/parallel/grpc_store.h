// GrpcStore: a Gloo rendezvous store backed by a RendezvousStore gRPC service, so ranks on
// several hosts can connect through one address (`host:port`). The same GlooCommunicator code
// serves one host (gloo's FileStore) and many (this), so multi-host is a deployment setting.
//
// Gloo's Store interface reports failure by exception; GrpcStore throws gloo::IoException with
// the RPC's status, which GlooCommunicator::Create turns back into an absl::Status.
//
// Thread-safe (gRPC stubs are).
#ifndef SEMMOE_ENGINE_PARALLEL_GRPC_STORE_H_
#define SEMMOE_ENGINE_PARALLEL_GRPC_STORE_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/rendezvous/rendezvous.grpc.pb.h"
#include "gloo/rendezvous/store.h"

namespace semmoe::engine {

class GrpcStore final : public gloo::rendezvous::Store {
 public:
  // Connects lazily to `target` (e.g. "127.0.0.1:7700"); insecure channel (cluster-internal).
  // `default_wait` bounds get() and wait() without a timeout (Gloo's connect uses them).
  explicit GrpcStore(const std::string& target,
                     std::chrono::milliseconds default_wait = kDefaultTimeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  std::vector<std::vector<char>> Fetch(const std::vector<std::string>& keys,
                                       std::chrono::milliseconds timeout);

  std::unique_ptr<rendezvous::RendezvousStore::Stub> stub_;
  const std::chrono::milliseconds default_wait_;
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_GRPC_STORE_H_
