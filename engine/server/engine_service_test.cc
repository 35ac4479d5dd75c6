// EngineService over a real one-rank group on a loopback port: streaming, the final record,
// validation errors, queue limits, cancellation by deadline, stats.
#include "engine/server/engine_service.h"

#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "common/file.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/parallel/gloo_communicator.h"
#include "engine/parallel/rank_model.h"
#include "engine/text/unicode.h"
#include "gloo/rendezvous/hash_store.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace semmoe::engine {
namespace {

class EngineServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = JoinPath(std::getenv("TEST_TMPDIR"), "tiny_service");
    ::semmoe::testing::TinyModelOptions o;
    o.seed = 2;
    ASSERT_TRUE(::semmoe::testing::WriteTinyModel(o, dir_).ok());
    auto comm = GlooCommunicator::Create(store_, {.rank = 0, .size = 1, .prefix = "svc"});
    ASSERT_TRUE(comm.ok());
    comm_ = std::move(*comm);
    auto config = model::LoadModelConfig(dir_);
    placement_ = std::make_unique<planner::Placement>(
        *planner::Placement::Vanilla(config->MoeLayers(), config->num_experts, 1));
    auto model = RankModel::Create(dir_, *placement_, *comm_, {});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::move(*model);
    GroupEngineOptions options;
    options.max_inbox = 2;
    options.batch.max_running = 1;
    options.batch.tokenizer = model_->tokenizer();  // As rank_group.cc sets it: the text.
    auto engine = GroupEngine::Create(*model_, options);
    ASSERT_TRUE(engine.ok());
    engine_ = std::move(*engine);
    service_ = std::make_unique<EngineServiceImpl>(
        *engine_, EngineServiceImpl::Options{.tokenizer = model_->tokenizer(),
                                             .vocab_size = config->vocab_size,
                                             .max_prompt_tokens = 64,
                                             .moe_layers = config->MoeLayers()});
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_GT(port, 0);
    stub_ = rpc::EngineService::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                            grpc::InsecureChannelCredentials()));
    engine_->Start();
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    if (engine_ != nullptr) {
      engine_->RequestStop();
      EXPECT_TRUE(engine_->Wait().ok());
    }
  }

  // Runs a Generate call to the end: the tokens, the final record and the status.
  // `text`, if given: the messages' texts joined.
  grpc::Status Generate(const rpc::GenerateRequest& request, std::vector<int32_t>* tokens,
                        rpc::FinalRecord* final, int deadline_ms = 20000,
                        std::string* text = nullptr) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
    auto reader = stub_->Generate(&context, request);
    rpc::GenerateResponse response;
    while (reader->Read(&response)) {
      if (tokens != nullptr) {
        tokens->insert(tokens->end(), response.token_ids().begin(), response.token_ids().end());
      }
      if (text != nullptr) *text += response.text();
      if (response.has_final() && final != nullptr) *final = response.final();
    }
    return reader->Finish();
  }

  std::string dir_;
  gloo::rendezvous::HashStore store_;
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<planner::Placement> placement_;
  std::unique_ptr<RankModel> model_;
  std::unique_ptr<GroupEngine> engine_;
  std::unique_ptr<EngineServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<rpc::EngineService::Stub> stub_;
};

TEST_F(EngineServiceTest, StreamsTokensThenTheFinalRecord) {
  rpc::GenerateRequest request;
  request.set_request_id("one");
  request.set_text("The router sends");
  request.set_max_tokens(7);
  request.set_ignore_eos(true);
  std::vector<int32_t> tokens;
  rpc::FinalRecord final;
  std::string text;
  const grpc::Status status = Generate(request, &tokens, &final, 20000, &text);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(tokens.size(), 7u);
  EXPECT_EQ(text, final.text());  // The streamed text adds up to the final one.
  EXPECT_EQ(final.text(), model::ToValidUtf8(*model_->tokenizer()->Decode(tokens, true)));
  EXPECT_EQ(final.request_id(), "one");
  EXPECT_EQ(final.completion_tokens(), 7);
  EXPECT_EQ(final.finish_reason(), "length");
  EXPECT_GT(final.prompt_tokens(), 0);
  EXPECT_GE(final.e2e_ms(), final.ttft_ms());
  // The same prompt as token ids, unnamed: the same tokens.
  rpc::GenerateRequest by_ids;
  auto ids = model_->tokenizer()->Encode("The router sends");
  for (int32_t id : *ids) by_ids.add_token_ids(id);
  by_ids.set_max_tokens(7);
  by_ids.set_ignore_eos(true);
  std::vector<int32_t> again;
  ASSERT_TRUE(Generate(by_ids, &again, &final).ok());
  EXPECT_EQ(again, tokens);
  EXPECT_EQ(final.request_id().rfind("req-", 0), 0u);
  // One rank holds every expert: all of the request's activations are local.
  EXPECT_GT(final.activations(), 0);
  EXPECT_EQ(final.local_activations(), final.activations());

  grpc::ClientContext context;
  rpc::EngineStats stats;
  ASSERT_TRUE(stub_->GetStats(&context, rpc::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.completed(), 2);
  EXPECT_EQ(stats.ranks(), 1);
  EXPECT_EQ(stats.layers_size(), 2);
  EXPECT_DOUBLE_EQ(stats.lar(), 1.0);  // One rank holds every expert.
  EXPECT_GT(stats.attention_seconds(), 0.0);
  ASSERT_EQ(stats.layer_times_size(), 2);  // The tiny model's two layers.
  EXPECT_GT(stats.layer_times(1).attention_seconds(), 0.0);
  EXPECT_EQ(stats.layer_times(1).layer(), 1);
  // The KV cache's room, in token positions; all of it free once the requests ended (the
  // gauges settle when the engine goes idle).
  EXPECT_GT(stats.kv_total_tokens(), 0);
  for (int i = 0; i < 200 && stats.kv_free_tokens() != stats.kv_total_tokens(); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
    grpc::ClientContext again_context;
    ASSERT_TRUE(stub_->GetStats(&again_context, rpc::GetStatsRequest(), &stats).ok());
  }
  EXPECT_EQ(stats.kv_free_tokens(), stats.kv_total_tokens());
}

TEST_F(EngineServiceTest, BadRequestsAreRefusedNamingTheField) {
  struct Case {
    std::function<void(rpc::GenerateRequest&)> make;
    std::string text;
  };
  const std::vector<Case> cases = {
      {[](rpc::GenerateRequest& r) {}, "empty"},
      {[](rpc::GenerateRequest& r) { r.add_token_ids(-1); }, "token_ids"},
      {[](rpc::GenerateRequest& r) { r.add_token_ids(1 << 30); }, "token_ids"},
      {[](rpc::GenerateRequest& r) {
         r.set_text("a");
         r.add_token_ids(1);
       },
       "either"},
      {[](rpc::GenerateRequest& r) {
         r.set_text("a");
         r.set_max_tokens(-3);
       },
       "max_tokens"},
      {[](rpc::GenerateRequest& r) { r.set_text(std::string(1000, 'x') + " y z"); }, "limit"},
      {[](rpc::GenerateRequest& r) {
         r.set_text("a");
         r.mutable_sampling()->set_temperature(-1);
       },
       "temperature"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    rpc::GenerateRequest request;
    cases[i].make(request);
    const grpc::Status status = Generate(request, nullptr, nullptr);
    // A prompt too long for the model is OUT_OF_RANGE (the HTTP door's context_length_exceeded).
    const bool too_long = std::string(cases[i].text) == "limit";
    EXPECT_EQ(status.error_code(),
              too_long ? grpc::StatusCode::OUT_OF_RANGE : grpc::StatusCode::INVALID_ARGUMENT)
        << i;
    EXPECT_NE(status.error_message().find(cases[i].text), std::string::npos)
        << i << ": " << status.error_message();
  }
}

TEST_F(EngineServiceTest, CancellingTheCallFreesTheEngineSlot) {
  rpc::GenerateRequest request;
  request.set_request_id("long");
  request.set_text("The");
  request.set_max_tokens(100000);  // Past the model's positions: rejected up front.
  EXPECT_EQ(Generate(request, nullptr, nullptr).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  request.set_max_tokens(500);
  request.set_ignore_eos(true);
  {
    grpc::ClientContext context;
    auto reader = stub_->Generate(&context, request);
    rpc::GenerateResponse response;
    ASSERT_TRUE(reader->Read(&response));  // It is running...
    context.TryCancel();                   // ... and the client goes away.
    while (reader->Read(&response)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  for (int i = 0; i < 300 && engine_->stats().cancelled == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(engine_->stats().cancelled, 1);
  EXPECT_EQ(engine_->stats().completed, 0);
  // Its slot (max_running = 1) serves the next request.
  rpc::GenerateRequest next;
  next.set_text("The");
  next.set_max_tokens(2);
  EXPECT_TRUE(Generate(next, nullptr, nullptr).ok());
}

}  // namespace
}  // namespace semmoe::engine
