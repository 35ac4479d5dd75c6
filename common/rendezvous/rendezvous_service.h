// RendezvousStore gRPC service: a thin adapter from RPCs to a KvStore (kv_store.h).
//
// Synchronous handlers: a Get that waits holds one server thread for at most its timeout, which
// for a rendezvous of G ranks is G threads at a time. Waits end early when the client cancels.
#ifndef SEMMOE_COMMON_RENDEZVOUS_RENDEZVOUS_SERVICE_H_
#define SEMMOE_COMMON_RENDEZVOUS_RENDEZVOUS_SERVICE_H_

#include "absl/time/time.h"
#include "common/rendezvous/kv_store.h"
#include "common/rendezvous/rendezvous.grpc.pb.h"

namespace semmoe::rendezvous {

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

}  // namespace semmoe::rendezvous

#endif  // SEMMOE_COMMON_RENDEZVOUS_RENDEZVOUS_SERVICE_H_
