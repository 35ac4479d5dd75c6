// PlannerService gRPC adapter over a PlacementStore (planner/proto/planner.proto).
//
// Synchronous handlers; the store (one SQLite connection) is shared under a mutex. WatchActive
// polls the store every `poll_interval` (activations may come from another process, e.g. the
// `planner activate` command) and holds one server thread per watcher until it cancels.
#ifndef SEMMOE_PLANNER_SERVER_PLANNER_SERVICE_H_
#define SEMMOE_PLANNER_SERVER_PLANNER_SERVICE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "planner/autopilot/serving_board.h"
#include "planner/proto/planner.grpc.pb.h"
#include "planner/store/placement_store.h"

namespace semmoe::planner {

class PlannerServiceImpl final : public rpc::PlannerService::Service {
 public:
  struct Options {
    absl::Duration poll_interval = absl::Milliseconds(500);
    Clock* clock = Clock::Real();  // Not owned.
    // Reports computed outside the store (planner/cli: DiffReport, EvalRows), given by the
    // binary that serves; unset: UNIMPLEMENTED.
    std::function<absl::StatusOr<std::string>(int64_t from, int64_t to)> diff;
    std::function<absl::StatusOr<std::string>(const rpc::EvaluateRequest&)> evaluate;
    std::function<absl::StatusOr<std::string>(const rpc::DriftRequest&)> drift;  // DriftReport.
    // Where ReportServing puts what groups report (not owned); null: UNIMPLEMENTED.
    ServingBoard* serving = nullptr;
  };
  // Takes the store.
  PlannerServiceImpl(std::unique_ptr<PlacementStore> store, const Options& options)
      : store_(std::move(store)), options_(options) {}

  // What GET /metrics answers (planner_metrics.h), read under the store's lock.
  absl::StatusOr<std::string> MetricsText();

  grpc::Status ListVersions(grpc::ServerContext* context, const rpc::ListVersionsRequest* request,
                            rpc::ListVersionsResponse* response) override;
  grpc::Status GetVersion(grpc::ServerContext* context, const rpc::GetVersionRequest* request,
                          rpc::PlacementVersion* response) override;
  grpc::Status GetActive(grpc::ServerContext* context, const rpc::GetActiveRequest* request,
                         rpc::PlacementVersion* response) override;
  grpc::Status Activate(grpc::ServerContext* context, const rpc::ActivateRequest* request,
                        rpc::ActivateResponse* response) override;
  grpc::Status Rollback(grpc::ServerContext* context, const rpc::GetActiveRequest* request,
                        rpc::PlacementVersion* response) override;
  grpc::Status DiffVersions(grpc::ServerContext* context, const rpc::DiffRequest* request,
                            rpc::Report* response) override;
  grpc::Status GetDrift(grpc::ServerContext* context, const rpc::DriftRequest* request,
                        rpc::Report* response) override;
  grpc::Status EvaluateVersions(grpc::ServerContext* context, const rpc::EvaluateRequest* request,
                                rpc::Report* response) override;
  grpc::Status WatchActive(grpc::ServerContext* context, const rpc::GetActiveRequest* request,
                           grpc::ServerWriter<rpc::PlacementVersion>* writer) override;
  grpc::Status GetAffinityTables(grpc::ServerContext* context,
                                 const rpc::GetVersionRequest* request,
                                 grpc::ServerWriter<rpc::TableChunk>* writer) override;
  grpc::Status GetLayerTables(grpc::ServerContext* context, const rpc::GetVersionRequest* request,
                              grpc::ServerWriter<rpc::TableChunk>* writer) override;
  grpc::Status GetPromptScores(grpc::ServerContext* context,
                               const rpc::PromptScoresRequest* request,
                               grpc::ServerWriter<rpc::TableChunk>* writer) override;

  grpc::Status CreateExperiment(grpc::ServerContext* context,
                                const rpc::CreateExperimentRequest* request,
                                rpc::Experiment* response) override;
  grpc::Status StartExperiment(grpc::ServerContext* context, const rpc::ExperimentId* request,
                               rpc::Experiment* response) override;
  grpc::Status StopExperiment(grpc::ServerContext* context, const rpc::ExperimentId* request,
                              rpc::Experiment* response) override;
  grpc::Status PromoteExperiment(grpc::ServerContext* context,
                                 const rpc::PromoteExperimentRequest* request,
                                 rpc::Experiment* response) override;
  grpc::Status GetExperiment(grpc::ServerContext* context, const rpc::ExperimentId* request,
                             rpc::Experiment* response) override;
  grpc::Status ListExperiments(grpc::ServerContext* context,
                               const rpc::ListExperimentsRequest* request,
                               rpc::ListExperimentsResponse* response) override;
  grpc::Status ListAutopilotDecisions(grpc::ServerContext* context,
                                      const rpc::ListAutopilotDecisionsRequest* request,
                                      rpc::ListAutopilotDecisionsResponse* response) override;
  grpc::Status ReportServing(grpc::ServerContext* context, const rpc::ServingReport* request,
                             rpc::ReportServingResponse* response) override;
  grpc::Status RecordArmMetrics(grpc::ServerContext* context,
                                const rpc::RecordArmMetricsRequest* request,
                                rpc::RecordArmMetricsResponse* response) override;

 private:
  // The experiment as the proto, read under mu_.
  grpc::Status ExperimentProto(int64_t id, rpc::Experiment* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // A table stored with a version (`get` reads it from the store under mu_), streamed in chunks.
  grpc::Status StreamStoredTable(int64_t version,
                                 absl::StatusOr<std::string> (PlacementStore::*get)(int64_t),
                                 grpc::ServerWriter<rpc::TableChunk>* writer);
  // A version's prompt-score table for a vocabulary: from the cache, or built from the stored
  // tables (outside mu_: seconds at a real vocabulary) and cached.
  absl::StatusOr<std::shared_ptr<const std::string>> PromptScores(int64_t version, uint32_t vocab,
                                                                  int ranks);

  absl::Mutex mu_;
  std::unique_ptr<PlacementStore> store_ ABSL_GUARDED_BY(mu_);
  const Options options_;
  // The last few prompt-score tables served, newest last, with their version's device count (a
  // hit needs no store read).
  struct CachedScores {
    int64_t version = 0;
    uint32_t vocab = 0;
    int devices = 0;
    std::shared_ptr<const std::string> bytes;
  };
  static constexpr size_t kCachedScoreTables = 4;
  absl::Mutex cache_mu_;
  std::deque<CachedScores> cache_ ABSL_GUARDED_BY(cache_mu_);
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_SERVER_PLANNER_SERVICE_H_
