// loadgen's runner against a real router in front of two one-rank engines (loopback gRPC).
#include "tools/loadgen/load_runner.h"

#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/server/testing/local_engine.h"
#include "engine/text/config.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "router/core/router_core.h"
#include "router/server/router_service.h"

namespace semmoe::tools {
namespace {

class LoadRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), "tiny_load");
    ASSERT_TRUE(semmoe::testing::WriteTinyModel({.seed = 4}, dir).ok());
    router::RouterOptions o;
    router::GroupOptions g{.rebatch = {.policy = router::Policy::kRoundRobin}};
    for (int r = 0; r < 2; ++r) {
      auto e = engine::testing::LocalEngine::Start(dir);
      ASSERT_TRUE(e.ok()) << e.status();
      g.ranks.push_back((*e)->target());
      engines_.push_back(std::move(*e));
    }
    o.groups = {g};
    o.tokenizer = engines_[0]->tokenizer();
    o.vocab_size = engine::model::LoadModelConfig(dir)->vocab_size;
    o.poll_interval = absl::Milliseconds(50);
    o.requeue = absl::ZeroDuration();  // No rank: fail at once (the backoff test wants that).
    core_ = std::make_unique<router::RouterCore>(o);
    service_ = std::make_unique<router::RouterServiceImpl>(*core_);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_GT(port, 0);
    stub_ = router::rpc::RouterService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
    prompts_ = {{.text = "the cat sat"}, {.token_ids = {70, 71, 72}}, {.text = "on the mat"}};
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
    service_.reset();
    core_.reset();
    engines_.clear();
  }

  std::vector<std::unique_ptr<engine::testing::LocalEngine>> engines_;
  std::unique_ptr<router::RouterCore> core_;
  std::unique_ptr<router::RouterServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<router::rpc::RouterService::Stub> stub_;
  std::vector<Prompt> prompts_;
};

TEST_F(LoadRunnerTest, ProgressLineCountsEndedRequestsOnStderr) {
  ::testing::internal::CaptureStderr();
  auto r = RunLoad(*stub_, prompts_,
                   {.rate = 10,
                    .duration = absl::Seconds(1),
                    .max_tokens = 2,
                    .slo_ttft_ms = 60000,
                    .slo_tpot_ms = 60000,
                    .progress = true});
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(r.ok()) << r.status();
  // The last line: every request that ended, of the 10 the rate implies over the second.
  EXPECT_NE(err.find(absl::StrCat("\rloadgen 10 req/s: ", r->completed + r->failed + r->rejected,
                                  "/10 requests")),
            std::string::npos)
      << err;
  EXPECT_EQ(err.back(), '\n');
}

TEST_F(LoadRunnerTest, ClosedLoopMeasuresEveryRequest) {
  auto r = RunLoad(*stub_, prompts_,
                   {.concurrency = 3,
                    .duration = absl::Seconds(1.5),
                    .max_tokens = 4,
                    .slo_ttft_ms = 60000,
                    .slo_tpot_ms = 60000});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->completed, 3);
  EXPECT_EQ(r->failed, 0) << (r->errors.empty() ? "" : r->errors[0]);
  EXPECT_EQ(r->sent, r->completed);
  EXPECT_EQ(r->output_tokens, 4 * r->completed);
  EXPECT_EQ(r->per_rank.size(), 2u);  // Round-robin over both ranks.
  EXPECT_GT(r->ttft_ms.p50, 0);
  EXPECT_LE(r->ttft_ms.p50, r->e2e_ms.p50);
  EXPECT_EQ(r->within_slo, r->completed);  // A lax SLO: goodput is throughput.
  EXPECT_DOUBLE_EQ(r->goodput_rps, r->throughput_rps);
  EXPECT_DOUBLE_EQ(r->slo_attainment, 1.0);
  // The router saw the same requests; the engines' counters say what the run moved (one rank
  // per group: everything is local).
  EXPECT_EQ(core_->Stats().completed(), r->completed);
  EXPECT_DOUBLE_EQ(r->lar, 1.0);
  EXPECT_EQ(r->a2a_bytes_per_token, 0.0);
}

TEST_F(LoadRunnerTest, OpenLoopAndAnImpossibleSlo) {
  auto r =
      RunLoad(*stub_, prompts_,
              {.rate = 20, .duration = absl::Seconds(1), .max_tokens = 2, .slo_ttft_ms = 1e-6});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->sent, 3);  // Poisson(20): P(≤ 3) < 1e-5.
  EXPECT_LT(r->sent, 60);
  EXPECT_EQ(r->completed, r->sent);
  EXPECT_EQ(r->within_slo, 0);
  EXPECT_EQ(r->goodput_rps, 0);
}

TEST_F(LoadRunnerTest, SweepReportsTheHighestRateInSlo) {
  auto s =
      Sweep(*stub_, prompts_,
            {.duration = absl::Seconds(0.5), .max_tokens = 2, .slo_ttft_ms = 60000}, {8, 4}, 0.9);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->points.size(), 2u);
  EXPECT_EQ(s->points[0].options.rate, 4);  // Ascending.
  EXPECT_EQ(s->best_rate, 8);
}

TEST_F(LoadRunnerTest, SearchDoublesWhileInSloThenBisects) {
  const LoadOptions base = {.duration = absl::Seconds(0.4), .max_tokens = 1};
  // A lax SLO holds all the way: 2, 4, 8 (the cap).
  LoadOptions lax = base;
  lax.slo_ttft_ms = 60000;
  auto s = SearchMaxRate(*stub_, prompts_, lax, 2, 8, 2, 0.9);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->points.size(), 3u);
  EXPECT_EQ(s->points[2].options.rate, 8);
  EXPECT_EQ(s->best_rate, 8);
  // An impossible one fails at once: no bisection below a rate that never held.
  LoadOptions impossible = base;
  impossible.slo_ttft_ms = 1e-6;
  int seen = 0;
  s = SearchMaxRate(*stub_, prompts_, impossible, 2, 8, 2, 0.9, [&](const LoadResult&) { ++seen; });
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->points.size(), 1u);
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(s->best_rate, 0);
  EXPECT_FALSE(SearchMaxRate(*stub_, prompts_, base, 0, 8, 2, 0.9).ok());
}

// With every rank gone, each request fails fast: the closed loop backs off instead of sending
// hundreds a second, and counts every failure by its code.
TEST_F(LoadRunnerTest, ClosedLoopBacksOffOnFailuresAndCountsThemByCode) {
  for (auto& e : engines_) e->Shutdown();
  auto r = RunLoad(*stub_, prompts_,
                   {.concurrency = 2,
                    .duration = absl::Seconds(1.5),
                    .max_tokens = 2,
                    .backoff_initial = absl::Milliseconds(50),
                    .backoff_max = absl::Milliseconds(400),
                    .record_requests = true});
  ASSERT_TRUE(r.ok()) << r.status();
  // Every request accounted for by id, each failure with its reason.
  ASSERT_EQ(static_cast<int64_t>(r->requests.size()), r->sent);
  std::set<std::string> ids;
  for (const RequestRecord& q : r->requests) {
    ids.insert(q.id);
    EXPECT_EQ(q.outcome, "failed") << q.id;
    EXPECT_EQ(q.code, "UNAVAILABLE") << q.id;
    EXPECT_FALSE(q.message.empty()) << q.id;
    EXPECT_LE(q.sent_s, q.end_s) << q.id;
  }
  EXPECT_EQ(static_cast<int64_t>(ids.size()), r->sent);
  EXPECT_EQ(r->completed, 0);
  EXPECT_GT(r->failed, 0);
  EXPECT_EQ(r->failed + r->rejected, r->sent);
  int64_t counted = 0;
  for (const auto& [code, n] : r->errors_by_code) counted += n;
  EXPECT_EQ(counted, r->sent);
  EXPECT_GT(r->errors_by_code["UNAVAILABLE"], 0) << r->ToJson().dump();
  // 50 + 100 + 200 + 400 + 400 ms ... per worker: a handful of requests, not hundreds.
  EXPECT_LT(r->sent, 30) << r->ToJson().dump();
  EXPECT_GT(r->backoff_s, 1.0);
  EXPECT_EQ(r->ToJson()["errors_by_code"]["UNAVAILABLE"], r->errors_by_code["UNAVAILABLE"]);
}

TEST_F(LoadRunnerTest, BadOptions) {
  EXPECT_FALSE(RunLoad(*stub_, prompts_, {.rate = 1, .concurrency = 1}).ok());
  EXPECT_FALSE(RunLoad(*stub_, prompts_, {}).ok());
  EXPECT_FALSE(RunLoad(*stub_, {}, {.concurrency = 1}).ok());
  EXPECT_FALSE(Sweep(*stub_, prompts_, {}, {}, 0.9).ok());
}

}  // namespace
}  // namespace semmoe::tools
