// PlannerService through a real gRPC server on an ephemeral loopback port.
#include "planner/server/planner_service.h"

#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "planner/affinity/prompt_score_table.h"
#include "planner/affinity/testing/real_scale.h"
#include "planner/affinity/token_affinity.h"
#include "planner/proto/table_chunks.h"
#include "planner/store/autopilot_store.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe::planner {
namespace {

class PlannerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempDatabasePath("service.db");
    auto store = PlacementStore::Open(path_);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->AddModel("m", 2, 8).ok());
    for (uint64_t seed : {1, 2}) {
      PlacementVersion v;
      v.model = "m";
      v.name = absl::StrCat("v", seed);
      v.algorithm = "random";
      v.placement = *Placement::Random({0, 1}, 8, 2, seed);
      ASSERT_TRUE((*store)->Create(v, seed == 1 ? "tables" : "").ok());
    }
    service_ = std::make_unique<PlannerServiceImpl>(
        std::move(*store),
        PlannerServiceImpl::Options{.poll_interval = absl::Milliseconds(20), .serving = &board_});
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_GT(port, 0);
    stub_ = rpc::PlannerService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }

  std::string path_;
  ServingBoard board_;
  std::unique_ptr<PlannerServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<rpc::PlannerService::Stub> stub_;
};

TEST_F(PlannerServiceTest, ListGetActivate) {
  grpc::ClientContext list_context;
  rpc::ListVersionsRequest list;
  list.set_model("m");
  rpc::ListVersionsResponse versions;
  ASSERT_TRUE(stub_->ListVersions(&list_context, list, &versions).ok());
  ASSERT_EQ(versions.versions_size(), 2);
  EXPECT_EQ(versions.versions(1).name(), "v2");
  EXPECT_TRUE(versions.versions(1).placement_json().empty());

  grpc::ClientContext no_active_context;
  rpc::GetActiveRequest active;
  active.set_model("m");
  rpc::PlacementVersion got;
  EXPECT_EQ(stub_->GetActive(&no_active_context, active, &got).error_code(),
            grpc::StatusCode::NOT_FOUND);

  grpc::ClientContext activate_context;
  rpc::ActivateRequest activate;
  activate.set_version(2);
  rpc::ActivateResponse done;
  ASSERT_TRUE(stub_->Activate(&activate_context, activate, &done).ok());
  grpc::ClientContext active_context;
  ASSERT_TRUE(stub_->GetActive(&active_context, active, &got).ok());
  EXPECT_EQ(got.version(), 2);
  EXPECT_EQ(got.status(), "active");
  auto placement = Placement::FromJson(got.placement_json());
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_EQ(placement->ToJson(), Placement::Random({0, 1}, 8, 2, 2)->ToJson());

  grpc::ClientContext tables_context;
  rpc::GetVersionRequest first;
  first.set_version(1);
  auto tables = ReadTableChunks(*stub_->GetAffinityTables(&tables_context, first), 1 << 20);
  ASSERT_TRUE(tables.ok()) << tables.status();
  EXPECT_EQ(*tables, "tables");
  grpc::ClientContext no_tables_context;
  rpc::GetVersionRequest second;
  second.set_version(2);
  EXPECT_EQ(ReadTableChunks(*stub_->GetAffinityTables(&no_tables_context, second), 1 << 20)
                .status()
                .code(),
            absl::StatusCode::kNotFound);

  grpc::ClientContext missing_context;
  rpc::GetVersionRequest missing;
  missing.set_version(99);
  EXPECT_EQ(stub_->GetVersion(&missing_context, missing, &got).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

// The autopilot's decisions, written by another connection (the autopilot's own), newest first.
TEST_F(PlannerServiceTest, AutopilotDecisionsNewestFirst) {
  auto store = PlacementStore::Open(path_);
  ASSERT_TRUE(store.ok());
  AutopilotStore decisions(**store);
  ASSERT_TRUE(decisions.Record({.model = "m", .action = "steady", .reason = "calm"}).ok());
  ASSERT_TRUE(decisions
                  .Record({.model = "m",
                           .action = "rollout",
                           .reason = "drift",
                           .served_version = 1,
                           .candidate_version = 2,
                           .moved_experts = 3})
                  .ok());
  grpc::ClientContext context;
  rpc::ListAutopilotDecisionsRequest request;
  request.set_model("m");
  rpc::ListAutopilotDecisionsResponse response;
  ASSERT_TRUE(stub_->ListAutopilotDecisions(&context, request, &response).ok());
  ASSERT_EQ(response.decisions_size(), 2);
  EXPECT_EQ(response.decisions(0).action(), "rollout");
  EXPECT_EQ(response.decisions(0).candidate_version(), 2);
  EXPECT_EQ(response.decisions(0).moved_experts(), 3);
  EXPECT_EQ(response.decisions(1).reason(), "calm");
  grpc::ClientContext unknown_context;
  request.set_model("nope");
  EXPECT_EQ(stub_->ListAutopilotDecisions(&unknown_context, request, &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
  grpc::ClientContext bad_context;
  request.set_limit(-1);
  EXPECT_EQ(stub_->ListAutopilotDecisions(&bad_context, request, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(PlannerServiceTest, ServingReportsReachTheBoardAndBadOnesAreRefused) {
  rpc::ServingReport report;
  report.set_model("m");
  report.set_group("127.0.0.1:7001");
  report.set_ranks(2);
  report.set_serving_version(1);
  report.set_refused_version(2);
  report.set_refusal("version 2 refused: rank 1: no such expert");
  report.set_completed(5);
  report.set_local_activations(40);
  report.set_remote_activations(10);
  report.set_output_tokens(50);
  report.set_request_seconds(2.5);
  rpc::ReportServingResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->ReportServing(&context, report, &response).ok());
  const std::vector<ServingState> seen = board_.Of("m", absl::Now(), absl::Seconds(30));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].group, "127.0.0.1:7001");
  EXPECT_EQ(seen[0].refused_version, 2);
  EXPECT_EQ(seen[0].refusal, "version 2 refused: rank 1: no such expert");
  EXPECT_EQ(seen[0].local_activations, 40);
  EXPECT_EQ(seen[0].output_tokens, 50);
  EXPECT_DOUBLE_EQ(seen[0].request_seconds, 2.5);

  grpc::ClientContext bad_context;
  report.set_completed(-3);
  const grpc::Status bad = stub_->ReportServing(&bad_context, report, &response);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad.error_message().find("127.0.0.1:7001"), std::string::npos) << bad.error_message();
  EXPECT_EQ(board_.Of("m", absl::Now(), absl::Seconds(30))[0].completed, 5);
  grpc::ClientContext nan_context;  // Seconds that are not a number: refused too.
  report.set_completed(5);
  report.set_request_seconds(std::nan(""));
  EXPECT_EQ(stub_->ReportServing(&nan_context, report, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// A watcher sees the current active version, then a change made by another process's
// connection (as `planner activate` would), then stops when it cancels.
TEST_F(PlannerServiceTest, WatchActiveSeesChangesFromOtherConnections) {
  auto other = PlacementStore::Open(path_);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->Activate(1).ok());
  grpc::ClientContext context;
  rpc::GetActiveRequest request;
  request.set_model("m");
  auto reader = stub_->WatchActive(&context, request);
  rpc::PlacementVersion v;
  ASSERT_TRUE(reader->Read(&v));
  EXPECT_EQ(v.version(), 1);
  ASSERT_TRUE((*other)->Activate(2).ok());
  ASSERT_TRUE(reader->Read(&v));
  EXPECT_EQ(v.version(), 2);
  context.TryCancel();
  while (reader->Read(&v)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

// At a real vocabulary and expert count the full tables (about 11 MB here) and the router's
// prompt-score table (2.43 MB) both arrive whole, in chunks; the prompt scores are those of the
// stored tables; a router for another number of ranks or a bad vocabulary is told what is wrong.
TEST(PlannerServiceRealScaleTest, TablesStreamWholeAtARealVocabulary) {
  const testing::RealScaleVersion big = testing::MakeRealScaleVersion();
  auto store = PlacementStore::Open(TempDatabasePath("real_scale.db"));
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->AddModel("qwen3", 48, 128).ok());
  PlacementVersion v{.model = "qwen3", .name = "big", .algorithm = "semantic"};
  v.placement = big.placement;
  ASSERT_TRUE((*store)->Create(v, big.affinity).ok());
  PlannerServiceImpl service(std::move(*store), {});
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  auto stub = rpc::PlannerService::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));

  grpc::ClientContext full_context;
  rpc::GetVersionRequest get;
  get.set_version(1);
  auto full = ReadTableChunks(*stub->GetAffinityTables(&full_context, get), 1 << 30);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(*full, big.affinity);
  EXPECT_GT(full->size(), 4u << 20);

  auto scores = [&](int64_t vocab, int ranks) {
    grpc::ClientContext context;
    rpc::PromptScoresRequest request;
    request.set_version(1);
    request.set_vocab(vocab);
    request.set_ranks(ranks);
    return ReadTableChunks(*stub->GetPromptScores(&context, request), 1 << 30);
  };
  for (int round = 0; round < 2; ++round) {  // Built, then from the cache.
    auto bytes = scores(151936, 8);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ(bytes->size(), PromptScoreTable::SerializedSize(151936, 8));
    auto want = PromptScoreTable::FromAffinity(*TokenAffinity::Deserialize(big.affinity),
                                               big.placement, 151936);
    EXPECT_EQ(*bytes, want->Serialize());
  }
  auto wrong_ranks = scores(151936, 4);
  EXPECT_EQ(wrong_ranks.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(wrong_ranks.status().message().find("places experts on 8 devices"), std::string::npos)
      << wrong_ranks.status();
  EXPECT_EQ(scores(0, 8).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(scores(int64_t{1} << 40, 8).status().code(), absl::StatusCode::kInvalidArgument);
  server->Shutdown();
}

}  // namespace
}  // namespace semmoe::planner
