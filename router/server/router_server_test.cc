#include "router/server/router_server.h"

#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "engine/server/testing/local_engine.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "router/proto/router.grpc.pb.h"
#include "tools/tiny_model/tiny_model.h"

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
  ASSERT_TRUE(tools::WriteTinyModel({.seed = 5}, dir).ok());
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

}  // namespace
}  // namespace semmoe::router
