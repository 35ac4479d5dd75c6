// RouterService in front of two real one-rank engines on loopback gRPC: streaming equals the
// engine, placement by affinity, validation, overload, cancellation and deadlines reaching the
// engine, and a retry when a rank is down.
#include "router/server/router_service.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/server/testing/local_engine.h"
#include "engine/text/config.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/placement/placement.h"
#include "planner/server/serve.h"
#include "planner/store/experiment_store.h"
#include "planner/store/placement_store.h"
#include "router/core/router_core.h"
#include "router/tables/router_tables.h"

namespace semmoe::router {
namespace {

using engine::testing::LocalEngine;

constexpr int32_t kX = 70, kY = 71;  // Byte tokens of the tiny model.

struct Outcome {
  grpc::Status status;
  std::vector<int32_t> tokens;
  std::string text;  // The streamed messages' texts joined.
  rpc::FinalRecord final;
};

template <typename F>
bool Eventually(F done) {
  const absl::Time until = absl::Now() + absl::Seconds(20);
  while (absl::Now() < until) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return done();
}

class RouterServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = JoinPath(std::getenv("TEST_TMPDIR"), "tiny_router");
    // Long enough positions that a generation outlasts a short deadline.
    ASSERT_TRUE(
        ::semmoe::testing::WriteTinyModel({.max_position_embeddings = 8192, .seed = 3}, dir_).ok());
    auto config = engine::model::LoadModelConfig(dir_);
    ASSERT_TRUE(config.ok());
    vocab_ = config->vocab_size;
    for (int r = 0; r < 2; ++r) {
      auto e = LocalEngine::Start(dir_);
      ASSERT_TRUE(e.ok()) << e.status();
      engines_.push_back(std::move(*e));
    }
  }

  // Without groups in `o`: one group over both engines with `policy` and the fixture's tables.
  void StartRouter(RouterOptions o, Policy policy = Policy::kSemantic) {
    if (o.groups.empty()) {
      GroupOptions g{.tables = &tables_, .rebatch = {.policy = policy}};
      for (const auto& e : engines_) g.ranks.push_back(e->target());
      o.groups = {g};
    }
    o.tokenizer = engines_[0]->tokenizer();
    o.vocab_size = vocab_;
    core_ = std::make_unique<RouterCore>(o);
    service_ = std::make_unique<RouterServiceImpl>(*core_);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_GT(port, 0);
    stub_ = rpc::RouterService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }

  // The server first (no call reaches the service), then the service and the core.
  void StopRouter() {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
    service_.reset();
    core_.reset();
  }

  void TearDown() override {
    StopRouter();
    engines_.clear();
  }

  Outcome Generate(const rpc::GenerateRequest& request, int deadline_ms = 30000,
                   bool cancel_after_first = false) {
    Outcome out;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
    auto reader = stub_->Generate(&context, request);
    rpc::GenerateResponse response;
    while (reader->Read(&response)) {
      out.tokens.insert(out.tokens.end(), response.token_ids().begin(), response.token_ids().end());
      out.text += response.text();
      if (response.has_final()) out.final = response.final();
      if (cancel_after_first && !out.tokens.empty()) context.TryCancel();
    }
    out.status = reader->Finish();
    return out;
  }

  static rpc::GenerateRequest Ids(std::vector<int32_t> ids, int max_tokens) {
    rpc::GenerateRequest r;
    for (int32_t id : ids) r.add_token_ids(id);
    r.set_max_tokens(max_tokens);
    r.set_ignore_eos(true);
    return r;
  }

  std::string dir_;
  int vocab_ = 0;
  std::vector<std::unique_ptr<LocalEngine>> engines_;
  TablesHolder tables_;
  std::unique_ptr<RouterCore> core_;
  std::unique_ptr<RouterServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<rpc::RouterService::Stub> stub_;
};

TEST_F(RouterServiceTest, StreamsWhatTheEngineGenerates) {
  StartRouter({});
  rpc::GenerateRequest request;
  request.set_text("the quick brown fox");
  request.set_max_tokens(12);
  request.set_ignore_eos(true);
  const Outcome got = Generate(request);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_EQ(got.tokens.size(), 12u);
  EXPECT_EQ(got.final.completion_tokens(), 12);
  EXPECT_GT(got.final.prompt_tokens(), 0);
  EXPECT_GE(got.final.e2e_ms(), got.final.ttft_ms());
  EXPECT_GE(got.final.ttft_ms(), got.final.queue_ms());
  EXPECT_TRUE(got.final.rank() == 0 || got.final.rank() == 1);
  EXPECT_DOUBLE_EQ(got.final.lar(), 1.0);  // One-rank engines: every activation is local.

  // The same request straight to an engine: the same greedy tokens and text.
  auto stub = engine::rpc::EngineService::NewStub(grpc::CreateChannel(
      engines_[1 - got.final.rank()]->target(), grpc::InsecureChannelCredentials()));
  engine::rpc::GenerateRequest direct;
  direct.set_text("the quick brown fox");
  direct.set_max_tokens(12);
  direct.set_ignore_eos(true);
  grpc::ClientContext context;
  auto reader = stub->Generate(&context, direct);
  engine::rpc::GenerateResponse response;
  std::vector<int32_t> want;
  std::string text;
  while (reader->Read(&response)) {
    want.insert(want.end(), response.token_ids().begin(), response.token_ids().end());
    if (response.has_final()) text = response.final().text();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(got.tokens, want);
  EXPECT_EQ(got.final.text(), text);
  EXPECT_EQ(got.text, text);  // The streamed pieces (decoded once, by the engine) add up.

  ASSERT_TRUE(Eventually([&] { return core_->Stats().polls() >= 2; }));
  const rpc::RouterStats stats = core_->Stats();
  for (const rpc::RankStats& r : stats.ranks()) EXPECT_GT(r.kv_free_tokens(), 0);  // Polled.
  EXPECT_EQ(stats.completed(), 1);
  EXPECT_EQ(stats.completion_tokens(), 12);
  EXPECT_EQ(stats.ttft_ms().count(), 1);
}

TEST_F(RouterServiceTest, PlacesRequestsByAffinity) {
  // Constructed tables: token X uses experts 0–3 (rank 0 under vanilla G = 2), Y experts 4–7.
  planner::trace::TraceSet t;
  t.header.num_experts = 8;
  t.header.top_k = 2;
  t.header.moe_layers = {0, 1};
  ASSERT_TRUE(t.AddRequest("r", {kX, kY}, {0, 1, 2, 3, 4, 5, 6, 7}).ok());
  auto built = BuildRouterTables(42, planner::BuildTokenAffinity(t).Serialize(),
                                 planner::Placement::Vanilla({0, 1}, 8, 2)->ToJson(), 2,
                                 static_cast<uint32_t>(vocab_));
  ASSERT_TRUE(built.ok()) << built.status();
  tables_.Set(*built);
  StartRouter({}, Policy::kSemantic);
  for (int i = 0; i < 3; ++i) {
    for (int32_t token : {kX, kY}) {
      const Outcome got = Generate(Ids(std::vector<int32_t>(8, token), 2));
      ASSERT_TRUE(got.status.ok()) << got.status.error_message();
      EXPECT_EQ(got.final.rank(), token == kX ? 0 : 1) << "token " << token;
      EXPECT_EQ(got.final.placement_version(), 42);
    }
  }
  // Round-robin ignores the tables.
  server_->Shutdown(std::chrono::system_clock::now());
  StartRouter({}, Policy::kRoundRobin);
  std::vector<int> ranks;
  for (int i = 0; i < 4; ++i) ranks.push_back(Generate(Ids({kX, kX}, 1)).final.rank());
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 0, 1}));
}

TEST_F(RouterServiceTest, BadRequestsNameTheField) {
  StartRouter({});
  rpc::GenerateRequest both = Ids({1, 2}, 1);
  both.set_text("x");
  const struct {
    rpc::GenerateRequest request;
    std::string message;
  } cases[] = {
      {both, "either text or token_ids"},
      {Ids({}, 1), "the prompt is empty"},
      {Ids({1, vocab_}, 1), absl::StrCat(vocab_, " is outside the vocabulary")},
      {Ids({1}, -1), "max_tokens"},
  };
  for (const auto& c : cases) {
    const Outcome got = Generate(c.request);
    EXPECT_EQ(got.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(got.status.error_message().find(c.message), std::string::npos)
        << got.status.error_message();
  }
}

TEST_F(RouterServiceTest, OverloadIsResourceExhaustedAndAcceptedRequestsFinish) {
  StartRouter({.max_in_flight = 2});
  std::vector<Outcome> long_ones(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] { long_ones[i] = Generate(Ids({kX, kY, kX}, 200)); });
  }
  ASSERT_TRUE(Eventually([&] { return core_->Stats().received() == 2; }));
  const Outcome third = Generate(Ids({kX}, 1));
  EXPECT_EQ(third.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  for (std::thread& t : threads) t.join();
  for (const Outcome& o : long_ones) {
    ASSERT_TRUE(o.status.ok()) << o.status.error_message();
    EXPECT_EQ(o.tokens.size(), 200u);
  }
  EXPECT_EQ(core_->Stats().rejected(), 1);
  EXPECT_TRUE(Generate(Ids({kX}, 1)).status.ok());  // Room again.
}

TEST_F(RouterServiceTest, CancellationAndDeadlinesFreeTheEngineSlot) {
  StartRouter({});
  auto engine_totals = [&] {
    int64_t running = 0, cancelled = 0;
    for (const auto& e : engines_) {
      running += e->engine().stats().running;
      cancelled += e->engine().stats().cancelled;
    }
    return std::make_pair(running, cancelled);
  };
  const Outcome cancelled = Generate(Ids({kX, kY}, 8000), 60000, /*cancel_after_first=*/true);
  EXPECT_EQ(cancelled.status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_FALSE(cancelled.tokens.empty());
  ASSERT_TRUE(Eventually([&] { return engine_totals() == std::make_pair<int64_t, int64_t>(0, 1); }))
      << engine_totals().first << " running, " << engine_totals().second << " cancelled";
  const Outcome late = Generate(Ids({kX, kY}, 8000), 300);
  EXPECT_EQ(late.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  ASSERT_TRUE(Eventually([&] { return engine_totals() == std::make_pair<int64_t, int64_t>(0, 2); }))
      << engine_totals().first << " running, " << engine_totals().second << " cancelled";
}

// An engine that answers nothing in time: GetStats hangs, as a SIGSTOPped process's would.
class StalledEngine final : public engine::rpc::EngineService::Service {
 public:
  grpc::Status GetStats(grpc::ServerContext* context, const engine::rpc::GetStatsRequest*,
                        engine::rpc::EngineStats*) override {
    for (int i = 0; i < 300 && !context->IsCancelled(); ++i) absl::SleepFor(absl::Milliseconds(10));
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "woke up");
  }
};

// A dead rank and a stalled one are reported by rank and reason within a few polls.
TEST_F(RouterServiceTest, DeadAndStalledRanksAreReportedWithTheirReasons) {
  StalledEngine stalled;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&stalled);
  std::unique_ptr<grpc::Server> stalled_server = builder.BuildAndStart();
  ASSERT_GT(port, 0);
  GroupOptions g{.tables = &tables_, .rebatch = {.policy = Policy::kRoundRobin}};
  g.ranks = {engines_[0]->target(), engines_[1]->target(), absl::StrCat("127.0.0.1:", port)};
  StartRouter({.groups = {g}, .poll_interval = absl::Milliseconds(50)});
  engines_[1]->Shutdown();
  const absl::Time start = absl::Now();
  ASSERT_TRUE(Eventually([&] {
    const rpc::RouterStats s = core_->Stats();
    return !s.ranks(1).down_reason().empty() && !s.ranks(2).down_reason().empty();
  }));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  const rpc::RouterStats s = core_->Stats();
  EXPECT_TRUE(s.ranks(0).down_reason().empty()) << s.ranks(0).down_reason();
  EXPECT_TRUE(s.ranks(0).usable());
  EXPECT_THAT(s.ranks(1).down_reason(), ::testing::HasSubstr("unreachable (dead?)"));
  EXPECT_THAT(s.ranks(2).down_reason(), ::testing::HasSubstr("no answer to stats within 1 s"));
  EXPECT_FALSE(s.ranks(1).usable());
  EXPECT_FALSE(s.ranks(2).usable());
  EXPECT_GE(s.ranks(1).down_for_s(), 0.0);
  ASSERT_TRUE(Eventually([&] { return core_->Stats().ranks(1).down_for_s() > 0.2; }));
  // Requests avoid both.
  for (int i = 0; i < 3; ++i) {
    const Outcome got = Generate(Ids({kX, kY}, 2));
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    EXPECT_EQ(got.final.rank(), 0);
  }
  StopRouter();  // Its poller may be waiting on the stalled server.
  stalled_server->Shutdown(std::chrono::system_clock::now());
}

TEST_F(RouterServiceTest, ARequestNoRankCanTakeWaitsForOneToComeBack) {
  const int port = engines_[1]->port();
  engines_[1]->Shutdown();
  GroupOptions g{.rebatch = {.policy = Policy::kRoundRobin}};
  g.ranks = {absl::StrCat("127.0.0.1:", port)};
  StartRouter(
      {.groups = {g}, .poll_interval = absl::Milliseconds(50), .requeue = absl::Seconds(15)});
  ASSERT_TRUE(Eventually([&] { return !core_->Stats().ranks(0).down_reason().empty(); }));
  // The rank comes back on its port (a supervisor restarted it) while the request waits.
  std::unique_ptr<LocalEngine> back;
  std::thread restart([&] {
    absl::SleepFor(absl::Milliseconds(800));
    auto e = LocalEngine::Start(dir_, {}, port);
    ASSERT_TRUE(e.ok()) << e.status();
    back = std::move(*e);
  });
  const Outcome got = Generate(Ids({kX, kY}, 2));
  restart.join();
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_GE(core_->Stats().requeued(), 1);
  EXPECT_EQ(core_->Stats().completed(), 1);
  // Without a requeue window: UNAVAILABLE at once.
  StopRouter();
  back->Shutdown();
  StartRouter(
      {.groups = {g}, .poll_interval = absl::Milliseconds(50), .requeue = absl::ZeroDuration()});
  ASSERT_TRUE(Eventually([&] { return !core_->Stats().ranks(0).down_reason().empty(); }));
  const absl::Time start = absl::Now();
  const Outcome none = Generate(Ids({kX}, 1));
  EXPECT_EQ(none.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(core_->Stats().requeued(), 0);
}

TEST_F(RouterServiceTest, ARankThatIsDownIsRetriedElsewhere) {
  StartRouter({.poll_interval = absl::Hours(1), .requeue = absl::Seconds(1)}, Policy::kRoundRobin);
  ASSERT_TRUE(Eventually([&] { return core_->Stats().polls() >= 1; }));
  ASSERT_TRUE(core_->Stats().ranks(1).usable());
  engines_[1]->Shutdown();
  for (int i = 0; i < 4; ++i) {
    const Outcome got = Generate(Ids({kX, kY}, 3));
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    EXPECT_EQ(got.final.rank(), 0);
  }
  const rpc::RouterStats stats = core_->Stats();
  EXPECT_GE(stats.retried(), 1);
  EXPECT_FALSE(stats.ranks(1).usable());
  EXPECT_EQ(stats.completed(), 4);
  // With no rank left, a clear UNAVAILABLE (after the requeue window).
  engines_[0]->Shutdown();
  const Outcome none = Generate(Ids({kX}, 1));
  EXPECT_EQ(none.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(none.status.error_message().find("rank"), std::string::npos)
      << none.status.error_message();
}

TEST_F(RouterServiceTest, ARankThatFailsMidStreamEndsTheStreamUnavailable) {
  StartRouter({.poll_interval = absl::Hours(1)}, Policy::kRoundRobin);
  // The first request goes to rank 0 (round-robin); it dies once tokens flow.
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto reader = stub_->Generate(&context, Ids({kX, kY}, 8000));
  rpc::GenerateResponse response;
  ASSERT_TRUE(reader->Read(&response));
  ASSERT_GT(response.token_ids_size(), 0);
  engines_[0]->Shutdown();
  while (reader->Read(&response)) {
  }
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_NE(status.error_message().find("engine rank 0 failed after"), std::string::npos)
      << status.error_message();
  EXPECT_EQ(core_->Stats().retried(), 0);  // Not retried: tokens had been sent.
}

TEST_F(RouterServiceTest, AnExperimentSplitsTrafficAndRecordsEachArm) {
  // The planner with a running experiment: arm A (70%) and arm B (30%).
  const std::string db = JoinPath(std::getenv("TEST_TMPDIR"), "ab.db");
  auto store = planner::PlacementStore::Open(db);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->AddModel("tiny", 2, 8).ok());
  planner::PlacementVersion v;
  v.model = "tiny";
  v.name = "vanilla";
  v.algorithm = "vanilla";
  v.placement = *planner::Placement::Vanilla({0, 1}, 8, 1);
  ASSERT_TRUE((*store)->Create(v).ok());
  ASSERT_TRUE((*store)->Create(v).ok());
  planner::ExperimentStore experiments(**store);
  auto id = experiments.Create("tiny", "ab", {{"A", 1, 70}, {"B", 2, 30}});
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(experiments.Start(*id).ok());
  auto planner_server = planner::PlannerServer::Start({.db = db});
  ASSERT_TRUE(planner_server.ok()) << planner_server.status();

  RouterOptions o{.experiment_id = *id,
                  .planner = absl::StrCat("127.0.0.1:", (*planner_server)->port()),
                  .report_interval = absl::Milliseconds(50)};
  o.groups = {GroupOptions{.name = "A", .share_percent = 70, .ranks = {engines_[0]->target()}},
              GroupOptions{.name = "B", .share_percent = 30, .ranks = {engines_[1]->target()}}};
  StartRouter(o);
  const int n = 300;
  int b = 0;
  for (int i = 0; i < n; ++i) {
    rpc::GenerateRequest r = Ids({kX}, 1);
    r.set_user_key(absl::StrCat("user-", i));
    const Outcome got = Generate(r);
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    ASSERT_TRUE(got.final.arm() == "A" || got.final.arm() == "B") << got.final.arm();
    b += got.final.arm() == "B";
    // A user stays in their arm.
    if (i < 5) {
      EXPECT_EQ(Generate(r).final.arm(), got.final.arm());
    }
  }
  EXPECT_NEAR(100.0 * b / n, 30, 5) << b << " of " << n;  // ChooseGroup's own test: ±2 at 20k.
  const rpc::RouterStats stats = core_->Stats();
  EXPECT_EQ(stats.experiment_id(), *id);
  ASSERT_EQ(stats.arms_size(), 2);
  EXPECT_EQ(stats.arms(0).completed() + stats.arms(1).completed(), n + 5);
  EXPECT_EQ(stats.arms(1).name(), "B");
  EXPECT_GT(stats.arms(1).ttft_ms().count(), 0);
  // Both arms' metrics reach the experiment in the planner's database.
  ASSERT_TRUE(Eventually([&] {
    auto e = experiments.Get(*id);
    if (!e.ok()) return false;
    for (const planner::ExperimentArm& arm : e->arms) {
      const nlohmann::json m = nlohmann::json::parse(arm.latest_metrics_json, nullptr, false);
      if (!m.is_object() || m.value("completed", 0) == 0) return false;
    }
    return true;
  }));
  StopRouter();
  (*planner_server)->Shutdown();
}

}  // namespace
}  // namespace semmoe::router
