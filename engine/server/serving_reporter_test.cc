#include "engine/server/serving_reporter.h"

#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "planner/proto/planner.grpc.pb.h"

namespace semmoe::engine {
namespace {

rpc::EngineStats RankZero() {
  rpc::EngineStats s;
  s.set_ranks(4);
  s.set_placement_version(7);
  s.set_completed(120);
  s.set_failed(2);
  s.mutable_rollout()->set_target_version(0);
  s.mutable_rollout()->set_refused_version(8);
  s.mutable_rollout()->set_error("version 8 refused: rank 2: the checkpoint lacks expert 5");
  for (int layer = 0; layer < 3; ++layer) {  // Rank 0's own: not what the group serves.
    rpc::MoeLayerStats* l = s.add_layers();
    l->set_local_activations(30 + layer);
    l->set_remote_activations(10);
  }
  rpc::GroupServing& group = *s.mutable_group_serving();  // Every rank's, summed.
  group.set_completed(410);
  group.set_failed(3);
  group.set_local_activations(930);
  group.set_remote_activations(300);
  group.set_output_tokens(4100);
  group.set_request_seconds(205.5);
  return s;
}

TEST(ServingReportTest, CarriesTheVersionsTheRefusalAndTheGroupsCounters) {
  const planner::rpc::ServingReport r = ServingReportFrom("qwen3", "10.0.0.1:50051", RankZero());
  EXPECT_EQ(r.model(), "qwen3");
  EXPECT_EQ(r.group(), "10.0.0.1:50051");
  EXPECT_EQ(r.ranks(), 4);
  EXPECT_EQ(r.serving_version(), 7);
  EXPECT_EQ(r.rollout_target(), 0);
  EXPECT_EQ(r.refused_version(), 8);
  EXPECT_EQ(r.refusal(), "version 8 refused: rank 2: the checkpoint lacks expert 5");
  EXPECT_EQ(r.completed(), 410);
  EXPECT_EQ(r.failed(), 3);
  EXPECT_EQ(r.local_activations(), 930);
  EXPECT_EQ(r.remote_activations(), 300);
  EXPECT_EQ(r.output_tokens(), 4100);
  EXPECT_DOUBLE_EQ(r.request_seconds(), 205.5);
  rpc::EngineStats none = RankZero();
  none.mutable_rollout()->set_refused_version(0);  // The error then is not a refusal.
  none.mutable_rollout()->set_error("lost the planner's watch");
  EXPECT_EQ(ServingReportFrom("qwen3", "g", none).refusal(), "");
}

// A planner that keeps what it is told.
class Planner final : public planner::rpc::PlannerService::Service {
 public:
  grpc::Status ReportServing(grpc::ServerContext*, const planner::rpc::ServingReport* r,
                             planner::rpc::ReportServingResponse*) override {
    absl::MutexLock lock(&mu);
    reports.push_back(*r);
    return grpc::Status::OK;
  }
  absl::Mutex mu;
  std::vector<planner::rpc::ServingReport> reports;
};

TEST(ServingReporterTest, ReportsEveryPeriodAndSaysWhenThePlannerIsUnreachable) {
  Planner planner;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&planner);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(port, 0);
  {
    ServingReporter reporter({.planner = "127.0.0.1:" + std::to_string(port),
                              .model = "qwen3",
                              .group = "127.0.0.1:9",
                              .stats = RankZero,
                              .period = absl::Milliseconds(20)});
    absl::MutexLock lock(&planner.mu);
    ASSERT_TRUE(planner.mu.AwaitWithTimeout(
        absl::Condition(
            +[](std::vector<planner::rpc::ServingReport>* r) { return r->size() >= 3; },
            &planner.reports),
        absl::Seconds(30)));
    EXPECT_EQ(planner.reports[0].serving_version(), 7);
    EXPECT_EQ(planner.reports[0].group(), "127.0.0.1:9");
  }
  server->Shutdown();

  ServingReporter lost({.planner = "127.0.0.1:" + std::to_string(port),
                        .model = "qwen3",
                        .group = "127.0.0.1:9",
                        .stats = RankZero,
                        .period = absl::Milliseconds(20)});
  for (int i = 0; i < 1500 && lost.error().empty(); ++i) absl::SleepFor(absl::Milliseconds(20));
  EXPECT_NE(lost.error().find("cannot report what the group serves to the planner 127.0.0.1:"),
            std::string::npos)
      << lost.error();
}

}  // namespace
}  // namespace semmoe::engine
