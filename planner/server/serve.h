// The planner's server: PlannerService plus the rendezvous store engine ranks on several hosts
// meet through (common/rendezvous/rendezvous.proto), on one port, with gRPC health checking and
// reflection. Runs until Shutdown().
#ifndef SEMMOE_PLANNER_SERVER_SERVE_H_
#define SEMMOE_PLANNER_SERVER_SERVE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics_server.h"
#include "common/rendezvous/kv_store.h"
#include "common/rendezvous/rendezvous_service.h"
#include "grpcpp/grpcpp.h"
#include "planner/autopilot/runner.h"
#include "planner/autopilot/serving_board.h"
#include "planner/server/planner_service.h"

namespace semmoe::planner {

class PlannerServer {
 public:
  struct Options {
    std::string db;
    std::string address = "127.0.0.1:0";  // Port 0: pick a free one (see port()).
    // Prometheus GET /metrics (planner_metrics.h) on `metrics_listen`: −1 off, 0 any free port
    // (metrics_port()).
    int metrics_port = -1;
    std::string metrics_listen = "127.0.0.1";
    PlannerServiceImpl::Options service;
    // The autopilot (autopilot.h) for one model, ticking every autopilot_period; none: off. Its
    // `serving` is set to the server's board (what following groups report).
    std::optional<AutopilotOptions> autopilot;
    absl::Duration autopilot_period = absl::Seconds(30);
  };
  // Opens the database and starts serving. Unavailable if the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<PlannerServer>> Start(const Options& options);
  ~PlannerServer();

  int port() const { return port_; }
  int metrics_port() const { return metrics_ != nullptr ? metrics_->port() : -1; }
  void Wait() { server_->Wait(); }
  void Shutdown();

 private:
  PlannerServer() = default;
  ServingBoard serving_;  // What following groups report (ReportServing); the autopilot reads it.
  std::unique_ptr<PlannerServiceImpl> planner_;
  rendezvous::KvStore kv_;
  std::unique_ptr<rendezvous::RendezvousService> rendezvous_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<metrics::MetricsServer> metrics_;
  std::unique_ptr<AutopilotRunner> autopilot_;
  int port_ = 0;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SERVER_SERVE_H_
