// RendezvousStore gRPC service: a thin adapter from RPCs to a KvStore (engine/parallel).
//
// Synchronous handlers: a Get that waits holds one server thread for at most its timeout, which
// for a rendezvous of G ranks is G threads at a time. Waits end early when the client cancels.
#ifndef SEMMOE_ENGINE_SERVER_RENDEZVOUS_SERVICE_H_
#define SEMMOE_ENGINE_SERVER_RENDEZVOUS_SERVICE_H_

#include "absl/time/time.h"
#include "engine/parallel/kv_store.h"
#include "engine/proto/rendezvous.grpc.pb.h"

namespace semmoe::engine {

class RendezvousService final : public RendezvousStore::Service {
 public:
  // `store` is borrowed and must outlive the service.
  explicit RendezvousService(KvStore& store) : store_(store) {}

  grpc::Status Set(grpc::ServerContext* context, const SetRequest* request,
                   SetResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const GetRequest* request,
                   GetResponse* response) override;

 private:
  KvStore& store_;
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_SERVER_RENDEZVOUS_SERVICE_H_
