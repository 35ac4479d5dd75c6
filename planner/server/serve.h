// The planner's server: PlannerService plus the rendezvous store engine ranks on several hosts
// meet through (common/rendezvous/rendezvous.proto), on one port, with gRPC health checking and
// reflection. Runs until Shutdown().
#ifndef SEMMOE_PLANNER_SERVER_SERVE_H_
#define SEMMOE_PLANNER_SERVER_SERVE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/rendezvous/kv_store.h"
#include "common/rendezvous/rendezvous_service.h"
#include "grpcpp/grpcpp.h"
#include "planner/server/planner_service.h"

namespace semmoe::planner {

class PlannerServer {
 public:
  struct Options {
    std::string db;
    std::string address = "127.0.0.1:0";  // Port 0: pick a free one (see port()).
    PlannerServiceImpl::Options service;
  };
  // Opens the database and starts serving. Unavailable if the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<PlannerServer>> Start(const Options& options);
  ~PlannerServer();

  int port() const { return port_; }
  void Wait() { server_->Wait(); }
  void Shutdown();

 private:
  PlannerServer() = default;
  std::unique_ptr<PlannerServiceImpl> planner_;
  rendezvous::KvStore kv_;
  std::unique_ptr<rendezvous::RendezvousService> rendezvous_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SERVER_SERVE_H_
