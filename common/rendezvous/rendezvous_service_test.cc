// Loopback round trips through a real gRPC server on an ephemeral port.
#include "common/rendezvous/rendezvous_service.h"

#include <memory>
#include <thread>

#include "absl/time/clock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace semmoe::rendezvous {
namespace {

class RendezvousServiceTest : public testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    stub_ = RendezvousStore::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { server_->Shutdown(); }

  grpc::Status Set(const std::string& key, const std::string& value) {
    SetRequest request;
    request.set_key(key);
    request.set_value(value);
    SetResponse response;
    grpc::ClientContext context;
    return stub_->Set(&context, request, &response);
  }

  grpc::Status Get(std::vector<std::string> keys, int64_t timeout_ms, GetResponse* response,
                   absl::Duration rpc_deadline = absl::Seconds(10)) {
    GetRequest request;
    for (const std::string& key : keys) request.add_keys(key);
    request.set_timeout_ms(timeout_ms);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + rpc_deadline));
    return stub_->Get(&context, request, response);
  }

  KvStore store_;
  RendezvousService service_{store_};
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<RendezvousStore::Stub> stub_;
};

TEST_F(RendezvousServiceTest, SetThenGetRoundTripsBinaryValues) {
  const std::string binary("rank\0address\xff", 13);
  ASSERT_TRUE(Set("rank/0", binary).ok());
  ASSERT_TRUE(Set("rank/1", "second").ok());
  GetResponse response;
  grpc::Status status = Get({"rank/1", "rank/0"}, 0, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.values_size(), 2);
  EXPECT_EQ(response.values(0), "second");
  EXPECT_EQ(response.values(1), binary);
}

TEST_F(RendezvousServiceTest, GetWaitsForAKeySetLater) {
  std::thread late([this] {
    absl::SleepFor(absl::Milliseconds(150));
    EXPECT_TRUE(Set("late", "here").ok());
  });
  GetResponse response;
  grpc::Status status = Get({"late"}, 5000, &response);
  late.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.values(0), "here");
}

TEST_F(RendezvousServiceTest, MissingKeysNameThemselves) {
  ASSERT_TRUE(Set("present", "x").ok());
  GetResponse response;
  grpc::Status now = Get({"present", "absent"}, 0, &response);
  EXPECT_EQ(now.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(now.error_message().find("absent"), std::string::npos) << now.error_message();

  const absl::Time start = absl::Now();
  grpc::Status waited = Get({"absent"}, 250, &response);
  EXPECT_EQ(waited.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(240));
}

TEST_F(RendezvousServiceTest, TheCallDeadlineBoundsTheWait) {
  GetResponse response;
  const absl::Time start = absl::Now();
  grpc::Status status = Get({"never"}, 60000, &response, absl::Milliseconds(300));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(RendezvousServiceTest, BadRequestsAreInvalidArgument) {
  EXPECT_EQ(Set("", "x").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Set(std::string(5000, 'k'), "x").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Set("big", std::string((1 << 20) + 1, 'v')).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace semmoe::rendezvous
