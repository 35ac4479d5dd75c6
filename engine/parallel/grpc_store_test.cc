// Four ranks rendezvous through the gRPC store (as ranks on several hosts would) and then run a
// collective over the TCP mesh they built.
#include "engine/parallel/grpc_store.h"

#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rendezvous/testing/local_rendezvous.h"
#include "engine/parallel/gloo_communicator.h"
#include "gtest/gtest.h"

namespace semmoe::engine {
namespace {

TEST(GrpcStoreTest, FourRanksConnectThroughTheServiceAndExchange) {
  rendezvous::testing::LocalRendezvous rendezvous;
  ASSERT_TRUE(rendezvous.ok());
  const std::string target = rendezvous.target();

  constexpr int kRanks = 4;
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      GrpcStore store(target);  // Each rank its own client, as on separate hosts.
      auto group = GlooCommunicator::Create(store, {.rank = r, .size = kRanks, .prefix = "grpc"});
      ASSERT_TRUE(group.ok()) << group.status();
      std::vector<float> send(kRanks), recv(kRanks);
      for (int j = 0; j < kRanks; ++j) send[j] = 10.0f * r + j;
      const std::vector<int64_t> ones(kRanks, 1);
      ASSERT_TRUE((*group)->AllToAllV(send, ones, absl::MakeSpan(recv), ones).ok());
      for (int j = 0; j < kRanks; ++j) EXPECT_EQ(recv[j], 10.0f * j + r);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GT(rendezvous.kv().total_bytes(), 0u);
}

TEST(GrpcStoreTest, UnreachableStoreIsAStatusNotACrash) {
  GrpcStore store("127.0.0.1:1");  // Nothing listens on port 1.
  auto group = GlooCommunicator::Create(
      store, {.rank = 0, .size = 2, .prefix = "nowhere", .timeout = absl::Milliseconds(300)});
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.status().message().find("rendezvous store"), absl::string_view::npos)
      << group.status();
}

}  // namespace
}  // namespace semmoe::engine
