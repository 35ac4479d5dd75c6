#include "router/server/router_server.h"

#include <cstdlib>
#include <functional>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/server/testing/local_engine.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "planner/affinity/testing/real_scale.h"
#include "planner/server/serve.h"
#include "planner/store/experiment_store.h"
#include "planner/store/placement_store.h"
#include "planner/store/testing/temp_database_path.h"
#include "router/proto/router.grpc.pb.h"

namespace semmoe::router {
namespace {

using ::testing::HasSubstr;

RouterServerOptions OneGroup(std::vector<std::string> engines) {
  RouterServerOptions o;
  o.model_dir = "model";
  o.engines = std::move(engines);
  return o;
}

TEST(ValidateRouterServerOptionsTest, NamesTheMistake) {
  EXPECT_TRUE(ValidateRouterServerOptions(OneGroup({"127.0.0.1:1"})).ok());
  EXPECT_THAT(ValidateRouterServerOptions(OneGroup({})).message(), HasSubstr("--engines"));
  RouterServerOptions o = OneGroup({"127.0.0.1:1"});
  o.model_dir.clear();
  EXPECT_THAT(ValidateRouterServerOptions(o).message(), HasSubstr("--model is required"));
  o = OneGroup({"127.0.0.1:1"});
  o.planner = "127.0.0.1:2";
  EXPECT_THAT(ValidateRouterServerOptions(o).message(), HasSubstr("--model_name"));
  o.model_name = "m";
  o.affinity_file = "a";
  o.placement_file = "p";
  EXPECT_THAT(ValidateRouterServerOptions(o).message(), HasSubstr("not both"));
  o.affinity_file.clear();
  o.placement_file.clear();
  o.version = 4;  // Follow and fixed at once.
  EXPECT_THAT(ValidateRouterServerOptions(o).message(), HasSubstr("or --version"));
  o.model_name.clear();
  EXPECT_TRUE(ValidateRouterServerOptions(o).ok());
  o = OneGroup({"127.0.0.1:1"});
  o.affinity_file = "a";
  EXPECT_THAT(ValidateRouterServerOptions(o).message(), HasSubstr("go together"));
  o = OneGroup({"127.0.0.1:1"});
  o.max_in_flight = 0;
  EXPECT_THAT(ValidateRouterServerOptions(o).message(), HasSubstr("--max_in_flight"));
  o = OneGroup({});
  o.experiment = 3;
  EXPECT_THAT(ValidateRouterServerOptions(o).message(), HasSubstr("needs --planner and --arms"));
  o.planner = "127.0.0.1:2";
  o.arms = {{"A", {"127.0.0.1:1"}}};
  EXPECT_TRUE(ValidateRouterServerOptions(o).ok());
  o.engines = {"127.0.0.1:1"};
  EXPECT_THAT(ValidateRouterServerOptions(o).message(), HasSubstr("engines from --arms"));
  o = OneGroup({"127.0.0.1:1"});
  o.rebatch.policy = Policy::kTime;  // The time rule predicts with a cluster's figures.
  EXPECT_THAT(ValidateRouterServerOptions(o).message(), HasSubstr("--policy time needs --cluster"));
  o.cluster = "h200";
  EXPECT_TRUE(ValidateRouterServerOptions(o).ok());
  o.rebatch.policy = Policy::kSemantic;
  EXPECT_THAT(ValidateRouterServerOptions(o).message(), HasSubstr("--cluster is for --policy time"));
}

// One row per bad value: the door's threads and the render bound are checked before anything
// starts (100,000 workers ended the router on thread creation).
TEST(ValidateRouterServerOptionsTest, HttpThreadsAndRenderBound) {
  struct Row {
    const char* name;
    std::function<void(RouterServerOptions&)> set;
    const char* says;
  } rows[] = {
      {"workers 0", [](RouterServerOptions& o) { o.http_workers = 0; }, "--http_workers"},
      {"workers 100000", [](RouterServerOptions& o) { o.http_workers = 100000; },
       "between 1 and 256"},
      {"threads -1", [](RouterServerOptions& o) { o.http_threads = -1; }, "--http_threads"},
      {"threads 257", [](RouterServerOptions& o) { o.http_threads = 257; }, "between 1 and 256"},
      {"render 0",
       [](RouterServerOptions& o) { o.chat_template_render_timeout = absl::ZeroDuration(); },
       "--chat_template_render_ms"},
      {"render -5ms",
       [](RouterServerOptions& o) { o.chat_template_render_timeout = absl::Milliseconds(-5); },
       "--chat_template_render_ms"},
      {"render inf",
       [](RouterServerOptions& o) { o.chat_template_render_timeout = absl::InfiniteDuration(); },
       "between 1 and 60000"},
  };
  for (const Row& row : rows) {
    RouterServerOptions o = OneGroup({"127.0.0.1:1"});
    row.set(o);
    EXPECT_THAT(ValidateRouterServerOptions(o).message(), HasSubstr(row.says)) << row.name;
  }
  RouterServerOptions o = OneGroup({"127.0.0.1:1"});
  o.http_workers = 256;
  o.chat_template_render_timeout = absl::Seconds(60);
  EXPECT_TRUE(ValidateRouterServerOptions(o).ok());
}

TEST(ParseArmsTest, NamesAndAddresses) {
  auto arms = ParseArms("A=h:1,h:2;B=h:3");
  ASSERT_TRUE(arms.ok()) << arms.status();
  EXPECT_EQ(arms->size(), 2u);
  EXPECT_THAT(arms->at("A"), ::testing::ElementsAre("h:1", "h:2"));
  EXPECT_THAT(arms->at("B"), ::testing::ElementsAre("h:3"));
  EXPECT_TRUE(ParseArms("")->empty());
  EXPECT_THAT(ParseArms("A=h:1;B").status().message(), HasSubstr("'B' is not NAME=HOST:PORT"));
  EXPECT_THAT(ParseArms("=h:1").status().message(), HasSubstr("is not NAME=HOST:PORT"));
}

TEST(RouterServerTest, AMissingModelIsAnErrorNamingIt) {
  RouterServerOptions o = OneGroup({"127.0.0.1:1"});
  o.model_dir = JoinPath(std::getenv("TEST_TMPDIR"), "nowhere");
  auto server = RouterServer::Start(o);
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr("nowhere"));
}

TEST(RouterServerTest, ServesGenerateOverItsEngines) {
  const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), "tiny_router_server");
  ASSERT_TRUE(::semmoe::testing::WriteTinyModel({.seed = 5}, dir).ok());
  auto engine = engine::testing::LocalEngine::Start(dir);
  ASSERT_TRUE(engine.ok()) << engine.status();
  RouterServerOptions o = OneGroup({(*engine)->target()});
  o.model_dir = dir;
  o.port = 0;
  auto server = RouterServer::Start(o);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  EXPECT_THAT((*server)->Describe(), HasSubstr("over 1 ranks, no tables (load only)"));
  EXPECT_THAT((*server)->Describe(), HasSubstr("policy semantic"));
  // The semantic policy without tables says so at start and in the stats.
  EXPECT_THAT((*server)->Describe(), HasSubstr("WARNING: no affinity tables"));
  EXPECT_THAT((*server)->Stats().tables_error(), HasSubstr("places by load alone"));

  auto stub = rpc::RouterService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  rpc::GenerateRequest request;
  request.add_token_ids(70);
  request.add_token_ids(71);
  request.set_max_tokens(4);
  request.set_ignore_eos(true);
  auto reader = stub->Generate(&context, request);
  rpc::GenerateResponse response;
  int tokens = 0;
  bool final = false;
  while (reader->Read(&response)) {
    tokens += response.token_ids_size();
    final = final || response.has_final();
  }
  const grpc::Status status = reader->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(tokens, 4);
  EXPECT_TRUE(final);
  (*server)->Shutdown();
}

// --policy time over two ranks of one engine model: each window is placed by the rule, the
// stats and /metrics say which rule's placement was kept and what it predicted; a cluster
// profile that is not there is refused at start, naming the flag.
TEST(RouterServerTest, TimePolicyPlacesAndSaysWhatItKept) {
  const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), "tiny_router_time");
  ASSERT_TRUE(::semmoe::testing::WriteTinyModel({.seed = 5}, dir).ok());
  auto a = engine::testing::LocalEngine::Start(dir);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = engine::testing::LocalEngine::Start(dir);
  ASSERT_TRUE(b.ok()) << b.status();
  RouterServerOptions o = OneGroup({(*a)->target(), (*b)->target()});
  o.model_dir = dir;
  o.port = 0;
  o.rebatch.policy = Policy::kTime;
  o.cluster = JoinPath(std::getenv("TEST_TMPDIR"), "no_such_profile.json");
  auto missing = RouterServer::Start(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("--cluster: cluster profile"));
  o.cluster = "h100";
  auto server = RouterServer::Start(o);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT((*server)->Describe(), HasSubstr("policy time"));
  auto stub = rpc::RouterService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    rpc::GenerateRequest request;
    request.add_token_ids(70 + i);
    request.add_token_ids(71);
    request.set_max_tokens(2);
    request.set_ignore_eos(true);
    auto reader = stub->Generate(&context, request);
    rpc::GenerateResponse response;
    while (reader->Read(&response)) {
    }
    ASSERT_TRUE(reader->Finish().ok());
  }
  const rpc::RouterStats stats = (*server)->Stats();
  EXPECT_EQ(stats.policy(), "time");
  const rpc::TimeRuleStats& t = stats.time_rule();
  EXPECT_EQ(t.kept_time() + t.kept_least_loaded() + t.kept_round_robin(), 3);  // One a request.
  EXPECT_GT(t.last_predicted_ms(), 0);
  EXPECT_LE(t.last_predicted_ms(), t.last_vanilla_ms());
  EXPECT_EQ(t.cluster(), "h100");
  (*server)->Shutdown();
}

// An A/B experiment at a real model's scale: 151,936-token vocabulary, 48 layers × 128 experts,
// G = 8 per arm. Each arm gets its own version's tables (in chunks), and the stats name them; an
// arm whose version has no tables keeps the experiment from starting, naming the arm.
TEST(RouterServerTest, RealScaleExperimentArmsGetTheirTables) {
  const std::string model = JoinPath(std::getenv("TEST_TMPDIR"), "real_vocab_model");
  ASSERT_TRUE(::semmoe::testing::WriteTinyModel({.vocab_size = 151936,
                                                 .hidden_size = 16,
                                                 .num_layers = 1,
                                                 .num_heads = 2,
                                                 .num_kv_heads = 1,
                                                 .head_dim = 8},
                                                model)
                  .ok());
  const std::string db = planner::TempDatabasePath("experiment_real_scale.db");
  auto store = planner::PlacementStore::Open(db);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->AddModel("qwen3", 48, 128).ok());
  std::vector<int64_t> versions;
  for (uint64_t seed : {1, 2, 3}) {
    const planner::testing::RealScaleVersion v =
        planner::testing::MakeRealScaleVersion({.seed = seed});
    planner::PlacementVersion pv{.model = "qwen3", .name = absl::StrCat("v", seed)};
    pv.algorithm = "semantic";
    pv.placement = v.placement;
    auto id = (*store)->Create(pv, seed == 3 ? "" : v.affinity);  // Version 3: no tables.
    ASSERT_TRUE(id.ok()) << id.status();
    versions.push_back(*id);
  }
  planner::ExperimentStore experiments(**store);
  auto with_tables = experiments.Create("qwen3", "1 vs 2",
                                        {{.name = "A", .version = 1, .share_percent = 50},
                                         {.name = "B", .version = 2, .share_percent = 50}});
  ASSERT_TRUE(with_tables.ok()) << with_tables.status();
  ASSERT_TRUE(experiments.Start(*with_tables).ok());
  auto server = planner::PlannerServer::Start({.db = db});
  ASSERT_TRUE(server.ok()) << server.status();

  RouterServerOptions o;
  o.model_dir = model;
  o.port = 0;
  o.planner = absl::StrCat("127.0.0.1:", (*server)->port());
  o.experiment = *with_tables;
  for (const char* arm : {"A", "B"}) {
    for (int r = 0; r < 8; ++r) o.arms[arm].push_back(absl::StrCat("127.0.0.1:", 1 + r));
  }
  auto router = RouterServer::Start(o);
  ASSERT_TRUE(router.ok()) << router.status();
  const rpc::RouterStats stats = (*router)->Stats();
  ASSERT_EQ(stats.arms_size(), 2);
  EXPECT_EQ(stats.arms(0).placement_version(), 1);
  EXPECT_EQ(stats.arms(1).placement_version(), 2);
  EXPECT_EQ(stats.tables_error(), "");
  (*router)->Shutdown();

  // One version's tables from the planner, fixed (what local_cluster --placement V runs).
  RouterServerOptions fixed;
  fixed.model_dir = model;
  fixed.port = 0;
  fixed.planner = o.planner;
  fixed.version = 2;
  fixed.engines = o.arms["A"];
  auto one = RouterServer::Start(fixed);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)->Stats().placement_version(), 2);
  EXPECT_EQ((*one)->Stats().tables_error(), "");
  EXPECT_THAT((*one)->Describe(), HasSubstr("version 2's tables from the planner"));
  (*one)->Shutdown();
  fixed.version = 3;  // No tables: the semantic policy refuses to start blind.
  auto none = RouterServer::Start(fixed);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("version 3's tables"));

  ASSERT_TRUE(experiments.Stop(*with_tables).ok());
  auto without = experiments.Create("qwen3", "1 vs 3",
                                    {{.name = "A", .version = 1, .share_percent = 50},
                                     {.name = "B", .version = 3, .share_percent = 50}});
  ASSERT_TRUE(without.ok());
  ASSERT_TRUE(experiments.Start(*without).ok());
  o.experiment = *without;
  auto refused = RouterServer::Start(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("arm B cannot be routed as planned"));
  EXPECT_THAT(refused.status().message(), HasSubstr("version 3"));
  // Without affinity routing, the same experiment runs, and its stats say what arm B lacks.
  o.rebatch.policy = Policy::kLeastLoaded;
  auto blind = RouterServer::Start(o);
  ASSERT_TRUE(blind.ok()) << blind.status();
  EXPECT_THAT((*blind)->Stats().tables_error(), HasSubstr("arm B: version 3's tables"));
  (*blind)->Shutdown();
  (*server)->Shutdown();
}

}  // namespace
}  // namespace semmoe::router
